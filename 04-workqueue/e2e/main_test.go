// Package e2e checks stage 04 against a real API server: the shared
// behaviour suite (harness/behaviour), retries with backoff and concurrent
// workers (the same checks stage 05 passes), ten updates synced once while
// the worker is busy, and a Logger deleted while the operator was stopped.
package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// pkg is the operator under test; OPERATOR_PKG points the tests at another
// copy, such as a learner's.
var pkg = harness.OperatorPackage("./04-workqueue")

func TestMain(m *testing.M) { harness.Main(m, "01-crd-yaml/crds") }

// stage describes stage 04 to the shared suite. New since 03: Retries, a
// failed write is tried again with backoff by the queue.
var stage = behaviour.Stage{
	Package:      pkg,
	RepairsDrift: true,
	CachedReads:  true,
	Retries:      true,
}

func TestBehaviour(t *testing.T) { behaviour.Run(t, stage) }

func TestRetryWithBackoff(t *testing.T) { behaviour.Retry(t, stage) }

func TestParallelWorkers(t *testing.T) { behaviour.Parallel(t, stage) }

func TestGracefulShutdown(t *testing.T) { behaviour.GracefulShutdown(t, stage) }

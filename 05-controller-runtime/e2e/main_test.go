// Package e2e checks stage 05 against a real API server: the shared
// behaviour suite (harness/behaviour), retries with backoff, concurrent
// workers, leader election between two replicas, and the operator running
// with nothing but its generated RBAC.
package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// The CRDs controller-gen generated, not 01's: the tests must run against
// what this stage ships.
func TestMain(m *testing.M) { harness.Main(m, "05-controller-runtime/config/crd") }

// stage describes stage 05 to the shared suite. The metrics and health
// endpoints are switched off ("0"): every test starts its own operator, often
// two at once, and they must not compete for the default ports.
var stage = behaviour.Stage{
	Package:      "./05-controller-runtime",
	Args:         []string{"--metrics-bind-address=0", "--health-probe-bind-address=0"},
	RepairsDrift: true,
	CachedReads:  true,
	Retries:      true,
}

func TestBehaviour(t *testing.T) { behaviour.Run(t, stage) }

func TestRetryWithBackoff(t *testing.T) { behaviour.Retry(t, stage) }

func TestParallelWorkers(t *testing.T) { behaviour.Parallel(t, stage) }

func TestGracefulShutdown(t *testing.T) { behaviour.GracefulShutdown(t, stage) }

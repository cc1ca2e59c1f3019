// Package e2e checks stage 06 against a real API server: the shared
// behaviour suite (harness/behaviour), retries with backoff, concurrent
// workers, and what this stage adds: the status subresource and its roles,
// conditions, owner references and garbage collection, the ticket's
// finalizer, and Events. Also stage 05's leader election, endpoints, least
// privilege and in-cluster manifests, which this stage keeps.
package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// The CRDs controller-gen generated, not 01's: the tests must run against
// what this stage ships.
func TestMain(m *testing.M) { harness.Main(m, "06-status-and-owners/config/crd") }

// stage describes stage 06 to the shared suite. The metrics and health
// endpoints are switched off ("0"): every test starts its own operator, often
// two at once, and they must not compete for the default ports. The seat
// ledger is the watched namespace (the default without --ledger-namespace),
// so each check's seat holds go with its namespace.
var stage = behaviour.Stage{
	Package:          "./06-status-and-owners",
	Args:             []string{"--metrics-bind-address=0", "--health-probe-bind-address=0"},
	RepairsDrift:     true,
	CachedReads:      true,
	Retries:          true,
	GarbageCollected: true,
	TicketFinalizer:  true,
}

func TestBehaviour(t *testing.T) { behaviour.Run(t, stage) }

func TestRetryWithBackoff(t *testing.T) { behaviour.Retry(t, stage) }

func TestParallelWorkers(t *testing.T) { behaviour.Parallel(t, stage) }

func TestGracefulShutdown(t *testing.T) { behaviour.GracefulShutdown(t, stage) }

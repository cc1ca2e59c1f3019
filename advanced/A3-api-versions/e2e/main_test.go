// Package e2e checks module A2 against a real API server: stage 06's shared
// behaviour suite (harness/behaviour), retries, workers and shutdown, with
// the webhook server off, and what A2 adds: every case of
// harness/admission through the webhook (cases_test.go), the same cases
// through A1's policies and the webhook in one run (parity_test.go), and
// what happens while the webhook is down (down_test.go). Stage 06's own
// tests of its concept stay in 06-status-and-owners/e2e: A2 leaves that
// code as it was.
package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// The CRDs controller-gen generated, not 01's: the tests must run against
// what this stage ships.
func TestMain(m *testing.M) { harness.Main(m, "advanced/A3-api-versions/config/crd") }

// stage describes module A2 to the shared suite. The metrics and health
// endpoints and the webhook server are switched off ("0"): every test starts
// its own operator, often two at once, and they must not compete for the
// default ports (and a webhook server without certificates would not
// start). The tests of the webhook start theirs with a port and
// certificates of their own (webhook_test.go). The seat
// ledger is the watched namespace (the default without --ledger-namespace),
// so each check's seat holds go with its namespace.
var stage = behaviour.Stage{
	Package:          "./advanced/A3-api-versions",
	Args:             []string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--webhook-bind-address=0"},
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

// Package e2e checks module A3 against a real API server: stage 06's shared
// behaviour suite (harness/behaviour) on the operator that now works in v2,
// A2's admission cases through its webhooks, now on v2 (cases_test.go), and
// what A3 adds: v1 and v2 clients side by side with the operator serving
// the conversion (versions_test.go), what stops while no conversion webhook
// answers (down_test.go), and the storage migration, read back from etcd
// (migration_test.go). A2's own tests of its concept stay in
// advanced/A2-admission-webhook/e2e.
package e2e

import (
	"testing"

	"k8s.io/client-go/rest"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// The Logger CRD converts through a webhook, so the package installs it
// with one: converter.go serves the conversion for as long as the tests
// run, and removes the CRD at the end (a later package installs its own
// v1-only Logger CRD, which the API server refuses while objects may be
// stored as v2).
//
// v1 is deprecated: client-go would log the API server's warning for every
// v1 request the tests send (TestSideBySide reads the one kubectl prints).
func TestMain(m *testing.M) {
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	harness.MainWith(m, startConverter, removeLoggerCRD)
}

// stage describes module A3 to the shared suite. The metrics and health
// endpoints and the webhook server are switched off ("0"): every test starts
// its own operator, often two at once, and they must not compete for the
// default ports. The package's converter converts in their place. The tests
// of the webhooks start theirs with a port and certificates of their own
// (webhook_test.go). The seat ledger is the watched namespace (the default
// without --ledger-namespace), so each check's seat holds go with its
// namespace.
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

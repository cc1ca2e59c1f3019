package behaviour

import (
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// Run checks the stage's operator against docs/behaviour.md. Each check is
// an e2e-framework feature, run as a subtest of t in a namespace of its own
// and with an operator process of its own, so one failure says which
// behaviour broke and never spills into the next check.
func Run(t *testing.T, s Stage) {
	t.Helper()
	if s.Package == "" {
		t.Fatal("behaviour.Stage.Package is empty: name the stage's Go package, e.g. ./02-raw-watch")
	}
	checks := []features.Feature{
		booking(s),               // booking.go
		logger(s),                // logger.go
		noWritesWhenConverged(s), // insync.go
	}
	if s.RepairsDrift {
		checks = append(checks, drift(s)) // drift.go
	} else {
		t.Logf("%s does not repair drift in Deployments; its own e2e tests assert that weakness", s.Package)
	}
	harness.Env().Test(t, checks...)
}

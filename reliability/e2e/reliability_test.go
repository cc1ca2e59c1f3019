// Package e2e runs the failure scenarios (docs/reliability.md) against every stage from
// 04 on: operator killed mid-batch, API server and etcd restarted, a poison
// object, a conflict storm; and the watch-expiry scenario against every
// stage from 02 on. It always runs on a kwok cluster of its own
// (harness.MainPrivate), because it stops and starts that cluster's
// processes.
//
// `make test` runs it with 30 tickets and 30 Loggers; `make chaos` with 300.
package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/behaviour"
)

func TestMain(m *testing.M) { harness.MainPrivate(m) }

// stageRun is a stage as these scenarios run it: where its operator is, the
// CRDs it runs with, and how the shared suite must treat it.
type stageRun struct {
	dir, crds string
	stage     behaviour.Stage
}

// noEndpoints switches the metrics and health endpoints of stages 05 and 06
// off: their default ports may be taken by a lab operator on the same
// machine, and nothing here reads them.
var noEndpoints = []string{"--metrics-bind-address=0", "--health-probe-bind-address=0"}

// The stages that must survive every scenario, with the CRDs they run with.
var stages = []stageRun{
	{"04-workqueue", "01-crd-yaml/crds", behaviour.Stage{Package: "./04-workqueue", CachedReads: true, StaleWritesConflict: true}},
	{"05-controller-runtime", "05-controller-runtime/config/crd", behaviour.Stage{Package: "./05-controller-runtime", Args: noEndpoints, CachedReads: true, StaleWritesConflict: true}},
	// Stage 06's tickets carry a finalizer: the suite has an operator
	// release them before a scenario's namespace is deleted.
	{"06-status-and-owners", "06-status-and-owners/config/crd", behaviour.Stage{Package: "./06-status-and-owners", Args: noEndpoints, CachedReads: true, TicketFinalizer: true, Conditions: true, StaleWritesConflict: true}},
}

// Watch expiry is the one scenario stages 02 and 03 must survive too: 02
// handles 410 Gone by hand, 03 has client-go's reflector do it. A Logger
// deleted meanwhile is one difference: 02, with no cache (CachedReads
// false), leaves its Deployment behind.
var expiryStages = append([]stageRun{
	{"02-raw-watch", "01-crd-yaml/crds", behaviour.Stage{Package: "./02-raw-watch"}},
	{"03-informer-cache", "01-crd-yaml/crds", behaviour.Stage{Package: "./03-informer-cache", CachedReads: true}},
}, stages...)

func TestReliability(t *testing.T) {
	scale := 30
	if s, err := strconv.Atoi(os.Getenv("CHAOS_SCALE")); err == nil && s > 0 {
		scale = s
	}
	for _, st := range stages {
		t.Run(st.dir, func(t *testing.T) {
			installCRDs(t, st.dir, st.crds)
			behaviour.Reliability(t, st.stage, scale)
		})
	}
}

func TestWatchExpiry(t *testing.T) {
	for _, st := range expiryStages {
		t.Run(st.dir, func(t *testing.T) {
			installCRDs(t, st.dir, st.crds)
			behaviour.WatchExpiry(t, st.stage)
		})
	}
}

// installCRDs (re)installs the CRDs a stage runs with; stage 06's differ from
// the others' (status subresource).
func installCRDs(t *testing.T, dir, crds string) {
	t.Helper()
	if _, err := os.Stat(harness.RepoPath(dir, "main.go")); err != nil {
		t.Fatalf("stage %s has no operator (main.go): %v", dir, err)
	}
	c, err := harness.NewClients(harness.Env().EnvConf().Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.InstallCRDs(context.Background(), harness.RepoPath(filepath.FromSlash(crds))); err != nil {
		t.Fatal(err)
	}
}

package e2e

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// TestFailedWriteWaitsForResync: stage 03's handlers do the work
// themselves, once per event. A write that fails is logged and dropped, and
// nothing brings the object back until the informer's periodic resync hands
// every cached object to the handlers again. The test shortens the resync
// with --resync so that it can watch both halves: the Deployment stays
// missing after the cause is gone, and appears at the resync.
func TestFailedWriteWaitsForResync(t *testing.T) {
	// Long enough for the steps before the check (a quota, a refused
	// create, a sentinel) on a loaded 2-core machine, where they take a few
	// seconds; a resync inside that window fails the test rather than
	// passing it.
	const resync = 30 * time.Second
	f := features.New("weakness: work inside event handlers").
		Assess("a Deployment create refused by a quota is retried only by the resync", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w := newWorld(t, cfg, "resync")
			blockDeployments(t, w)
			op := w.start(t, "--resync", resync.String())
			started := time.Now()

			w.createLogger(t, "blocked", 1)
			op.WaitForLog(converge, "error loggers", w.NS+"/blocked", "exceeded quota")
			unblockDeployments(t, w)

			// The Logger handler takes events one after the other: once the
			// sentinel's Deployment exists, "blocked" has long been handled.
			w.createLogger(t, "sentinel", 1)
			w.waitDeployment(t, "logger-sentinel", 1)
			if op.CountLog("event RESYNC", "loggers", w.NS+"/blocked ") > 0 {
				t.Fatalf("a resync came before the check (%s after start); the test cannot tell the two apart", time.Since(started).Round(time.Millisecond))
			}
			if d := w.deployment(t, "logger-blocked"); d != nil {
				t.Fatalf("logger-blocked exists before any resync: the failed create was retried, which stage 03 cannot do")
			}

			// The resync hands "blocked" over again, and this time the create
			// goes through.
			harness.Eventually(t, resync+converge, "the resync to create logger-blocked", func(ctx context.Context) (bool, string, error) {
				return w.deployment(t, "logger-blocked") != nil, "not yet", nil
			})
			t.Logf("logger-blocked created %s after the operator started (resync every %s)", time.Since(started).Round(time.Second), resync)
			if op.CountLog("event RESYNC", "loggers", w.NS+"/blocked ") == 0 {
				t.Errorf("logger-blocked appeared, but the log shows no resync of blocked; something else retried it")
			}
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

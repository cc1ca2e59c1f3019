package e2e

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// TestLoggerDeletedWhileStoppedLeavesOrphan: stage 02 deletes a Logger's
// Deployment on the Logger's DELETED event, and only then. An operator that
// was not running at the time never receives that event: a LIST shows what
// exists, not what was deleted. The Deployment stays, an orphan.
func TestLoggerDeletedWhileStoppedLeavesOrphan(t *testing.T) {
	f := features.New("weakness: missed deletes leave orphans").
		Assess("a Logger deleted while the operator is stopped leaves its Deployment behind", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w := newWorld(t, cfg, "orphan")
			a := w.start(t)
			w.createLogger(t, "orphaned", 1)
			w.waitDeployment(t, "logger-orphaned", 1)
			if err := a.Stop(); err != nil {
				t.Fatalf("stopping the operator: %v", err)
			}

			w.deleteLogger(t, "orphaned")
			harness.Eventually(t, converge, "Logger orphaned to be gone", func(ctx context.Context) (bool, string, error) {
				_, err := w.C.Dynamic.Resource(loggersGVR).Namespace(w.NS).Get(ctx, "orphaned", metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, "", nil
				}
				return false, "still there", err
			})

			// The new operator's Deployment stream hands over the orphan
			// first (from its LIST) and the sentinel's Deployment later, one
			// at a time: once the sentinel's event is logged, the orphan has
			// been handled.
			b := w.start(t)
			w.createLogger(t, "sentinel", 1)
			b.WaitForLog(converge, "event ADDED", "deployments", w.NS+"/logger-sentinel ")
			if n := b.CountLog("event ADDED", "deployments", w.NS+"/logger-orphaned "); n == 0 {
				t.Errorf("the new operator did not list logger-orphaned")
			}
			if d := w.deployment(t, "logger-orphaned"); d == nil {
				t.Errorf("logger-orphaned was deleted; stage 02 only deletes on a DELETED event it receives")
			}
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

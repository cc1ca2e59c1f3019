package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// TestDeploymentDriftIsNotRepaired: stage 02 watches its Deployments only to
// report their availability in the Logger's status. It sees a Deployment
// scaled or deleted by hand, and does not compare it with the Logger.
//
// To know that the operator has handled a change without sleeping, a step
// creates a sentinel Logger afterwards. Its Deployment is created after the
// change, so its ADDED event comes later on the same Deployment watch, which
// the loop handles in order: once the sentinel's event is logged, the change
// has been handled.
func TestDeploymentDriftIsNotRepaired(t *testing.T) {
	var (
		w  *world
		op *harness.Operator
	)
	sentinel := func(t *testing.T, name string) {
		t.Helper()
		w.createLogger(t, name, 1)
		op.WaitForLog(converge, "event ADDED", "deployments", w.NS+"/logger-"+name+" ")
	}
	deleteDeployment := func(t *testing.T, name string) {
		t.Helper()
		if err := w.C.Kube.AppsV1().Deployments(w.NS).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f := features.New("weakness: no drift repair").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w = newWorld(t, cfg, "no-drift-repair")
			op = w.start(t)
			w.createLogger(t, "drifter", 2)
			w.createLogger(t, "paused", 0)
			w.waitDeployment(t, "logger-drifter", 2)
			w.waitDeployment(t, "logger-paused", 0)
			// The operator's own status write comes back to it as a Logger
			// event, and that event's sync would undo the changes below. Wait
			// until it has been handled: the operator says "in sync" after
			// writing the final state.
			settled(t, op, "state Available loggers "+w.NS+"/drifter", "in sync loggers "+w.NS+"/drifter")
			settled(t, op, "state Unavailable loggers "+w.NS+"/paused", "in sync loggers "+w.NS+"/paused")
			return ctx
		}).
		Assess("a Deployment scaled by hand stays scaled", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			patch := []byte(`{"spec":{"replicas":4}}`)
			scaled, err := w.C.Kube.AppsV1().Deployments(w.NS).Patch(ctx, "logger-drifter", types.MergePatchType, patch, metav1.PatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sentinel(t, "sentinel-1")
			// The event of this very change: the rollout's own status
			// updates of logger-drifter were logged before it.
			if n := op.CountLog("event MODIFIED", "deployments", w.NS+"/logger-drifter ", "resourceVersion="+scaled.ResourceVersion); n == 0 {
				t.Errorf("the operator logged no MODIFIED event for logger-drifter at resourceVersion %s, the scale by hand; it should see the change", scaled.ResourceVersion)
			}
			if d := w.deployment(t, "logger-drifter"); d == nil || *d.Spec.Replicas != 4 {
				t.Errorf("logger-drifter was changed back (%v); stage 02 does not repair drift", d)
			}
			return ctx
		}).
		Assess("a deleted Deployment whose Logger's state does not change stays deleted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// paused has 0 replicas: Unavailable with or without a Deployment.
			deleteDeployment(t, "logger-paused")
			sentinel(t, "sentinel-2")
			if d := w.deployment(t, "logger-paused"); d != nil {
				t.Errorf("logger-paused was created again; stage 02 does not repair drift")
			}
			return ctx
		}).
		Assess("a deleted Deployment whose Logger was Available comes back, by accident", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The DELETED event flips drifter's state to Unavailable. That
			// status write is an Update of the whole Logger (no status
			// subresource), so it comes back as a MODIFIED Logger event, and
			// the Logger's sync creates the Deployment again.
			deleteDeployment(t, "logger-drifter")
			w.waitDeployment(t, "logger-drifter", 2)
			// The operator logs "created Deployment" after the API server
			// has answered the create, so the Deployment can be seen before
			// the line is written: wait for the log too.
			settled(t, op,
				"event DELETED  deployments "+w.NS+"/logger-drifter ",
				"state Unavailable loggers "+w.NS+"/drifter",
				"event MODIFIED loggers "+w.NS+"/drifter ",
				"created Deployment "+w.NS+"/logger-drifter",
			)
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

// settled waits until the operator's log shows each of lines, in order.
func settled(t *testing.T, op *harness.Operator, lines ...string) {
	t.Helper()
	harness.Eventually(t, converge, fmt.Sprintf("the log lines %q, in order", lines), func(context.Context) (bool, string, error) {
		log := op.Log()
		return inOrder(log, lines), "the operator's log:\n" + log, nil
	})
}

// inOrder reports whether each of parts occurs in s after the one before.
func inOrder(s string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

package behaviour

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// LabelStripped checks the weakness of stages 03 to 05 that stage 06 fixes:
// someone removes the managed-by label from a Logger's Deployment
// (`kubectl label deploy logger-x app.kubernetes.io/managed-by-`). The
// operator's cache holds only Deployments with that label, so to the
// operator the Deployment is gone; its create is answered AlreadyExists,
// which it takes for "ours, and its event will follow" or "someone else's",
// and returns as success. No event follows: the Deployment is never updated
// again, and the Logger's status stays as it was. deletedWithLogger says
// whether deleting the Logger still deletes it: yes in 03 (a delete by name),
// no in 04 and 05 (they look in the cache, so it is left running, an orphan).
func LabelStripped(t *testing.T, s Stage, deletedWithLogger bool) {
	t.Helper()
	harness.Env().Test(t, labelStripped(s, deletedWithLogger))
}

func labelStripped(s Stage, deletedWithLogger bool) features.Feature {
	const logger = "tagged"
	var (
		f    *fixture
		sent *sentinels
		ours *appsv1.Deployment
	)
	name := deploymentName(logger)
	onDelete := "deleting the Logger leaves it running, an orphan"
	if deletedWithLogger {
		onDelete = "deleting the Logger deletes it, by name"
	}
	return features.New("a Logger's Deployment without its managed-by label").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "stripped")
			sent = &sentinels{f: f}
			sent.startInOrder(t)
			f.Create(t, loggerGVR, newLogger(logger, logger, 5, 1))
			f.waitDeployment(t, name, exists)
			f.waitLoggerState(t, logger, stateAvailable)
			return ctx
		}).
		Assess("the label is removed: the operator loses sight of the Deployment", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			patch := []byte(`{"metadata":{"labels":{"` + managedByLabel + `":null}}}`)
			d, err := f.C.Kube.AppsV1().Deployments(f.NS).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("removing the label of %s: %v", name, err)
			}
			ours = d
			// The label-filtered watch reports the change as a delete. A
			// witness Logger turns Available only once the operator has read
			// its Deployment's availability from the cache, which the watch
			// brought after that delete: by then the cache has dropped ours.
			f.Create(t, loggerGVR, newLogger("witness", "witness", 5, 1))
			f.waitLoggerState(t, "witness", stateAvailable)
			return ctx
		}).
		Assess("a spec change never reaches it, and the status stays as it was", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f.patchSpec(t, loggerGVR, logger, map[string]any{"replicas": 0})
			sent.handled(t)
			d, err := f.Deployment(ctx, name)
			if err != nil || d == nil {
				t.Fatalf("%s: %v, err %v", name, d, err)
			}
			if got := ptr.Deref(d.Spec.Replicas, -1); got != 1 {
				t.Errorf("%s has %d replicas; the weakness is that the Logger's replicas 0 never reaches it", name, got)
			}
			if _, labelled := d.Labels[managedByLabel]; labelled {
				t.Errorf("%s got its %s label back; the weakness is that nothing puts it back", name, managedByLabel)
			}
			if l, err := f.Get(ctx, loggerGVR, logger); err != nil || l == nil || str(l, "status", "state") != stateAvailable {
				t.Errorf("Logger %s: %v, err %v; want status.state still %s, as before the label went", logger, l, err, stateAvailable)
			}
			return ctx
		}).
		Assess(onDelete, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f.Delete(t, loggerGVR, logger)
			if deletedWithLogger {
				f.waitDeploymentGone(t, name)
				return ctx
			}
			sent.handled(t)
			d, err := f.Deployment(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if d == nil || d.UID != ours.UID {
				t.Fatalf("%s was deleted or replaced (%v); the weakness is that it is left behind, an orphan", name, d)
			}
			t.Logf("%s (uid %s) runs on with %d replica(s), its Logger gone", name, d.UID, ptr.Deref(d.Spec.Replicas, -1))
			return ctx
		}).
		Feature()
}

package behaviour

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

// drift: a Deployment changed or deleted behind the operator's back is put
// back, with no change to the Logger to prompt it (Stage.RepairsDrift).
func drift(s Stage) features.Feature {
	var f *fixture
	want := wantDeployment{logger: "drifter", printed: "drifter-e2e", interval: 5, replicas: 2, image: defaultImage}
	name := deploymentName(want.logger)
	matches := func(d *appsv1.Deployment) (bool, string) {
		p := want.problems(d)
		return len(p) == 0, strings.Join(p, "; ")
	}
	// patch changes the Deployment the way a person with kubectl would.
	patch := func(t *testing.T, pt types.PatchType, body string) {
		t.Helper()
		if _, err := f.C.Kube.AppsV1().Deployments(f.NS).Patch(context.Background(), name, pt, []byte(body), metav1.PatchOptions{}); err != nil {
			t.Fatalf("patching %s: %v", name, err)
		}
	}
	return features.New("drift in the Deployment is repaired").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "drift")
			f.start(t)
			f.Create(t, loggerGVR, newLogger(want.logger, want.printed, want.interval, int64(want.replicas)))
			f.waitDeployment(t, name, matches)
			f.waitLoggerState(t, want.logger, stateAvailable)
			// The operator's own status write comes back to it as a Logger
			// event, and a sync for that event would put the Deployment
			// right even in an operator that never looks at Deployment
			// changes (stage 02). A fresh operator that found everything in
			// sync has no such echo pending: only the drift below can move it.
			f.restartInSync(t, want.logger)
			return ctx
		}).
		Assess("scaling the Deployment by hand is undone", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The patch is stored before it returns, so from here on only
			// the operator can make the Deployment right again.
			patch(t, types.MergePatchType, `{"spec":{"replicas":5}}`)
			f.waitDeployment(t, name, matches)
			return ctx
		}).
		Assess("a changed image and environment are put back", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			patch(t, types.JSONPatchType, `[
				{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "busybox:drifted"},
				{"op": "replace", "path": "/spec/template/spec/containers/0/env", "value": [{"name": "LOGGER_NAME", "value": "someone-else"}]}
			]`)
			f.waitDeployment(t, name, matches)
			return ctx
		}).
		Assess("deleting the Deployment brings it back", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			old, err := f.Deployment(ctx, name)
			if err != nil || old == nil {
				t.Fatalf("reading %s: %v", name, err)
			}
			if err := f.C.Kube.AppsV1().Deployments(f.NS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			f.waitDeployment(t, name, func(d *appsv1.Deployment) (bool, string) {
				if d.UID == old.UID {
					return false, "still the deleted one"
				}
				return matches(d)
			})
			return ctx
		}).
		Feature()
}

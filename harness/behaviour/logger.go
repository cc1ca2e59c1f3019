package behaviour

import (
	"context"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

// testImage is passed with --logger-image, to check that the flag reaches the
// Deployment. kwok never pulls images, so there it need not exist. On kind
// the pods really run, so it is the default busybox:1.37 under its fully
// qualified name: the same image, yet another string than the default, so
// the check still sees the flag arrive.
var testImage = map[bool]string{
	false: "registry.invalid/operator-flow/logger:e2e",
	true:  "docker.io/library/busybox:1.37",
}[os.Getenv("CLUSTER") == "kind"]

// logger: a Logger gets its Deployment, follows spec changes, reports
// availability, and takes the Deployment with it when deleted.
func logger(s Stage) features.Feature {
	var f *fixture
	want := wantDeployment{logger: "heartbeat", printed: "heartbeat-e2e", interval: 5, replicas: 2, image: testImage}
	matches := func(d *appsv1.Deployment) (bool, string) {
		p := want.problems(d)
		return len(p) == 0, strings.Join(p, "; ")
	}
	return features.New("Logger gets a Deployment").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "logger")
			// The API server itself then refuses pods that break the
			// restricted profile: the Logger could never become Available.
			patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted"}}}`)
			if _, err := f.C.Kube.CoreV1().Namespaces().Patch(ctx, f.NS, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			f.start(t, "--logger-image", testImage)
			return ctx
		}).
		Assess("a new Logger gets Deployment logger-<name> and becomes Available", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f.Create(t, loggerGVR, newLogger(want.logger, want.printed, want.interval, int64(want.replicas)))
			d := f.waitDeployment(t, deploymentName(want.logger), matches)
			f.waitLoggerState(t, want.logger, stateAvailable)
			if s.GarbageCollected {
				checkOwner(t, f, d)
			}
			return ctx
		}).
		Assess("its pods print the activity line every timeInterval seconds (kind only)", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f.waitLoggerOutput(t, want.logger, want.printed, want.interval)
			return ctx
		}).
		Assess("changing replicas and timeInterval reaches the Deployment", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			want.replicas, want.interval = 3, 7
			f.patchSpec(t, loggerGVR, want.logger, map[string]any{"replicas": 3, "timeInterval": 7})
			f.waitDeployment(t, deploymentName(want.logger), matches)
			return ctx
		}).
		Assess("with replicas 0 the Logger is Unavailable", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			want.replicas = 0
			f.patchSpec(t, loggerGVR, want.logger, map[string]any{"replicas": 0})
			f.waitDeployment(t, deploymentName(want.logger), matches)
			f.waitLoggerState(t, want.logger, stateUnavailable)
			return ctx
		}).
		Assess("deleting the Logger deletes its Deployment", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// By the operator's delete handling in stages 02 to 05, by the
			// garbage collector in 06: the outcome is the same.
			f.Delete(t, loggerGVR, want.logger)
			f.waitDeploymentGone(t, deploymentName(want.logger))
			return ctx
		}).
		Feature()
}

// checkOwner asserts that the Deployment names its Logger as controlling
// owner, which is what lets the garbage collector delete it.
func checkOwner(t *testing.T, f *fixture, d *appsv1.Deployment) {
	t.Helper()
	l, err := f.Get(context.Background(), loggerGVR, d.Labels["app.kubernetes.io/instance"])
	if err != nil || l == nil {
		t.Fatalf("reading the Logger of %s: %v", d.Name, err)
	}
	ref := metav1.GetControllerOf(d)
	if ref == nil || ref.Kind != "Logger" || ref.UID != l.GetUID() {
		t.Fatalf("Deployment %s: controller owner reference %+v, want the Logger %s (uid %s)", d.Name, ref, l.GetName(), l.GetUID())
	}
}

package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// TestConditions: a ResourceQuota that allows no Deployments makes the API
// server refuse the Logger's Deployment. The Logger says so in its
// conditions (Degraded, with the reason and the API server's words), and in
// a Warning Event, and says it again, the other way, once the quota is
// lifted. `kubectl describe` shows both.
func TestConditions(t *testing.T) {
	var w *world
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "no-deployments"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/deployments.apps": resource.MustParse("0")}},
	}
	f := features.New("conditions follow what happens to the Deployment").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w = newWorld(t, cfg, "conditions")
			if _, err := w.C.Kube.CoreV1().ResourceQuotas(w.NS).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			w.start(t)
			return ctx
		}).
		Assess("while a quota forbids Deployments, the Logger is Degraded with the reason", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if _, err := w.C.Dynamic.Resource(loggerGVR).Namespace(w.NS).Create(ctx, newLoggerObject("blocked", 1), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			u := waitCondition(t, w, loggerGVR, "blocked", "Degraded", "True", "DeploymentCreateFailed")
			degraded, _ := conditionOf(u, "Degraded")
			if !strings.Contains(degraded.Message, "exceeded quota") || degraded.ObservedGeneration != u.GetGeneration() {
				t.Errorf("Degraded: %s; want the API server's words (exceeded quota) at generation %d", degraded, u.GetGeneration())
			}
			for typ, want := range map[string]string{"Available": "False/NoDeployment"} {
				if c, _ := conditionOf(u, typ); c.Status+"/"+c.Reason != want {
					t.Errorf("%s: %s, want %s", typ, c, want)
				}
			}
			if state, _, _ := unstructured.NestedString(u.Object, "status", "state"); state != "Unavailable" {
				t.Errorf("status.state = %q, want Unavailable", state)
			}
			waitEvent(t, w.C, w.NS, "blocked", corev1.EventTypeWarning, "Failed", "exceeded quota")
			out := describe(t, w, "blocked")
			for _, want := range []string{"DeploymentCreateFailed", "Warning  Failed", "exceeded quota"} {
				if !strings.Contains(out, want) {
					t.Errorf("kubectl describe logger blocked does not show %q:\n%s", want, out)
				}
			}
			return ctx
		}).
		Assess("once the quota is lifted, the Logger is Available and no longer Degraded", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := w.C.Kube.CoreV1().ResourceQuotas(w.NS).Delete(ctx, quota.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			u := waitCondition(t, w, loggerGVR, "blocked", "Available", "True", "MinimumReplicasAvailable")
			if c, _ := conditionOf(u, "Degraded"); c.Status != "False" || c.Reason != "AsExpected" {
				t.Errorf("Degraded: %s, want False/AsExpected", c)
			}
			waitEvent(t, w.C, w.NS, "blocked", corev1.EventTypeNormal, "Created", "Created deployment logger-blocked")
			t.Logf("kubectl describe logger blocked:\n%s", describe(t, w, "blocked"))
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// describe runs `kubectl describe logger name` (./bin/kubectl) as the test.
func describe(t *testing.T, w *world, name string) string {
	t.Helper()
	out, err := exec.Command(harness.RepoPath("bin", "kubectl"), "--kubeconfig", w.Kubeconfig, "-n", w.NS, "describe", "logger", name).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl describe: %v\n%s", err, out)
	}
	return string(out)
}

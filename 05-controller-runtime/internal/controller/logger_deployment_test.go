package controller

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	examplev1 "github.com/operator-flow/operator-flow/05-controller-runtime/api/example/v1"
)

func testLogger() *examplev1.Logger {
	return &examplev1.Logger{
		ObjectMeta: metav1.ObjectMeta{Name: "heartbeat", Namespace: "lab"},
		Spec:       examplev1.LoggerSpec{Name: `x"; rm -rf / #`, TimeInterval: 5, Replicas: ptr.To[int32](2)},
	}
}

// The Deployment has the exact shape docs/behaviour.md describes.
func TestDesiredDeploymentShape(t *testing.T) {
	d := desiredDeployment(testLogger(), "busybox:1.37")

	if d.Name != "logger-heartbeat" || d.Namespace != "lab" {
		t.Errorf("name = %s/%s, want lab/logger-heartbeat", d.Namespace, d.Name)
	}
	wantPodLabels := map[string]string{"app.kubernetes.io/name": "logger", "app.kubernetes.io/instance": "heartbeat"}
	for k, v := range wantPodLabels {
		if d.Labels[k] != v || d.Spec.Selector.MatchLabels[k] != v || d.Spec.Template.Labels[k] != v {
			t.Errorf("label %s=%s missing on the Deployment, its selector or its pods", k, v)
		}
	}
	if d.Labels["app.kubernetes.io/managed-by"] != "operator-flow" {
		t.Errorf("Deployment labels %v lack managed-by=operator-flow", d.Labels)
	}
	if _, ok := d.Spec.Selector.MatchLabels["app.kubernetes.io/managed-by"]; ok {
		t.Errorf("the selector must not use managed-by (selectors are immutable; keep them minimal)")
	}
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %d, want 2", *d.Spec.Replicas)
	}

	c := loggerContainer(d)
	if c == nil {
		t.Fatal("no container named logger")
	}
	if c.Image != "busybox:1.37" {
		t.Errorf("image = %s", c.Image)
	}
	wantCmd := []string{"/bin/sh", "-c", `while true; do echo "$(date -u +%FT%TZ) $LOGGER_NAME is active"; sleep "$TIME_INTERVAL"; done`}
	if len(c.Command) != 3 || c.Command[0] != wantCmd[0] || c.Command[1] != wantCmd[1] || c.Command[2] != wantCmd[2] {
		t.Errorf("command = %q, want %q", c.Command, wantCmd)
	}
	// spec.name travels as data, never as part of the script.
	wantEnv := []corev1.EnvVar{{Name: "LOGGER_NAME", Value: `x"; rm -rf / #`}, {Name: "TIME_INTERVAL", Value: "5"}}
	if len(c.Env) != 2 || c.Env[0] != wantEnv[0] || c.Env[1] != wantEnv[1] {
		t.Errorf("env = %v, want %v", c.Env, wantEnv)
	}

	// Pod Security "restricted".
	p := d.Spec.Template.Spec.SecurityContext
	if p == nil || !ptr.Deref(p.RunAsNonRoot, false) || ptr.Deref(p.RunAsUser, 0) != 65534 ||
		p.SeccompProfile == nil || p.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext = %+v", p)
	}
	s := c.SecurityContext
	if s == nil || ptr.Deref(s.AllowPrivilegeEscalation, true) || !ptr.Deref(s.ReadOnlyRootFilesystem, false) ||
		s.Capabilities == nil || len(s.Capabilities.Drop) != 1 || s.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container securityContext = %+v", s)
	}
}

func TestDesiredDeploymentDefaultsReplicasToOne(t *testing.T) {
	l := testLogger()
	l.Spec.Replicas = nil
	if got := *desiredDeployment(l, "img").Spec.Replicas; got != 1 {
		t.Errorf("replicas = %d, want 1", got)
	}
}

func TestDrift(t *testing.T) {
	want := desiredDeployment(testLogger(), "busybox:1.37")
	cases := map[string]struct {
		change func(c *corev1.Container, replicas *int32)
		drift  bool
	}{
		"unchanged":   {func(*corev1.Container, *int32) {}, false},
		"replicas":    {func(_ *corev1.Container, r *int32) { *r = 5 }, true},
		"image":       {func(c *corev1.Container, _ *int32) { c.Image = "nginx" }, true},
		"command":     {func(c *corev1.Container, _ *int32) { c.Command = []string{"sleep", "1"} }, true},
		"environment": {func(c *corev1.Container, _ *int32) { c.Env[0].Value = "other" }, true},
		// Fields the API server defaults are not drift; otherwise every
		// reconcile would rewrite the Deployment.
		"defaulted field": {func(c *corev1.Container, _ *int32) { c.TerminationMessagePath = "/dev/termination-log" }, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			have := want.DeepCopy()
			tc.change(loggerContainer(have), have.Spec.Replicas)
			if got := drifted(have, want); got != tc.drift {
				t.Fatalf("drifted = %v, want %v", got, tc.drift)
			}
			if tc.drift {
				repair(have, want)
				if drifted(have, want) {
					t.Errorf("still drifted after repair")
				}
			}
		})
	}
	t.Run("container removed", func(t *testing.T) {
		have := want.DeepCopy()
		have.Spec.Template.Spec.Containers[0].Name = "renamed"
		if !drifted(have, want) {
			t.Error("a Deployment without the logger container is not drift")
		}
	})
}

func TestLoggerForDeployment(t *testing.T) {
	d := desiredDeployment(testLogger(), "img")
	got := loggerForDeployment(t.Context(), d)
	if len(got) != 1 || got[0].Namespace != "lab" || got[0].Name != "heartbeat" {
		t.Errorf("our Deployment maps to %v, want lab/heartbeat", got)
	}
	// Someone else's Deployment with the same instance label (Helm sets it)
	// must not wake a Logger.
	d.Labels["app.kubernetes.io/managed-by"] = "Helm"
	if got := loggerForDeployment(t.Context(), d); len(got) != 0 {
		t.Errorf("a Helm Deployment maps to %v, want nothing", got)
	}
}

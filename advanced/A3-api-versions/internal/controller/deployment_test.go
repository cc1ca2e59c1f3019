package controller

import (
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	examplev2 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v2"
)

func TestDesiredDeployment(t *testing.T) {
	d := desiredDeployment("ns", "heartbeat", examplev2.LoggerSpec{Name: "beat; rm -rf /", Interval: "5s", Replicas: ptr.To[int32](2)}, "busybox:1.37")
	if d.Name != "logger-heartbeat" || d.Namespace != "ns" {
		t.Errorf("name = %s/%s, want ns/logger-heartbeat", d.Namespace, d.Name)
	}
	if d.Labels[managedByLabel] != managedBy || d.Labels[instanceLabel] != "heartbeat" || d.Labels[nameLabel] != "logger" {
		t.Errorf("labels = %v", d.Labels)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod labels %v", k, v, d.Spec.Template.Labels)
		}
	}
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %d, want 2", *d.Spec.Replicas)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "busybox:1.37" || c.Name != "logger" {
		t.Errorf("container %s image %s", c.Name, c.Image)
	}
	want := []corev1.EnvVar{{Name: "LOGGER_NAME", Value: "beat; rm -rf /"}, {Name: "TIME_INTERVAL", Value: "5"}}
	if len(c.Env) != 2 || c.Env[0] != want[0] || c.Env[1] != want[1] {
		t.Errorf("env = %v, want %v", c.Env, want)
	}
	// spec.name goes into the environment only, never into the script.
	if strings.Contains(strings.Join(c.Command, " "), "beat") {
		t.Errorf("spec.name was pasted into the command: %q", c.Command)
	}
	if sc := c.SecurityContext; *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context %+v is not restricted", sc)
	}
	if pod := d.Spec.Template.Spec.SecurityContext; !*pod.RunAsNonRoot || *pod.RunAsUser != 65534 || pod.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v is not restricted", pod)
	}
}

func TestDeploymentDrifted(t *testing.T) {
	spec := examplev2.LoggerSpec{Name: "beat", Interval: "5s", Replicas: ptr.To[int32](2)}
	want := desiredDeployment("ns", "heartbeat", spec, "busybox:1.37")
	for _, tc := range []struct {
		name   string
		change func(*appsv1.Deployment)
		drift  bool
	}{
		{"as made", func(*appsv1.Deployment) {}, false},
		{"with the API server's defaults and a status", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
			d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
			d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
			d.Status.AvailableReplicas = 2
		}, false},
		{"scaled", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](5) }, true},
		{"another image", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "busybox:evil" }, true},
		{"another environment", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env[1].Value = "1" }, true},
		{"another command", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Command = []string{"sleep", "1"} }, true},
		{"a second container", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "extra"})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := desiredDeployment("ns", "heartbeat", spec, "busybox:1.37")
			tc.change(have)
			if got := deploymentDrifted(have, want); got != tc.drift {
				t.Errorf("deploymentDrifted = %v, want %v", got, tc.drift)
			}
		})
	}
}

func TestLoggerState(t *testing.T) {
	d := &appsv1.Deployment{}
	if got := loggerState(nil); got != examplev2.StateUnavailable {
		t.Errorf("no Deployment: %s", got)
	}
	if got := loggerState(d); got != examplev2.StateUnavailable {
		t.Errorf("0 available: %s", got)
	}
	d.Status.AvailableReplicas = 1
	if got := loggerState(d); got != examplev2.StateAvailable {
		t.Errorf("1 available: %s", got)
	}
}

// A Logger stored without replicas (before the CRD had its default) gets
// the default, 1.
func TestDesiredDeploymentDefaultsReplicas(t *testing.T) {
	d := desiredDeployment("ns", "a", examplev2.LoggerSpec{Name: "a", Interval: "1s"}, "busybox:1.37")
	if *d.Spec.Replicas != 1 {
		t.Errorf("replicas = %d, want 1", *d.Spec.Replicas)
	}
}

// The repair patch, applied the way the API server applies a merge patch,
// turns a drifted Deployment into one that is not drifted, and keeps what
// the operator does not own.
func TestRepairPatch(t *testing.T) {
	want := desiredDeployment("ns", "heartbeat", examplev2.LoggerSpec{Name: "beat", Interval: "5s", Replicas: ptr.To[int32](2)}, "busybox:1.37")
	drifted := want.DeepCopy()
	drifted.Spec.Replicas = ptr.To[int32](7)
	drifted.Spec.Template.Spec.Containers[0].Image = "busybox:evil"
	drifted.Spec.Template.Spec.Containers[0].Env = append(drifted.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "EXTRA", Value: "1"})
	drifted.Spec.Template.Spec.Containers = append(drifted.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar"})
	drifted.Spec.RevisionHistoryLimit = ptr.To[int32](3)
	drifted.Status.AvailableReplicas = 7

	before, err := json.Marshal(drifted)
	if err != nil {
		t.Fatal(err)
	}
	after, err := jsonpatch.MergePatch(before, repairPatch(want))
	if err != nil {
		t.Fatal(err)
	}
	var got appsv1.Deployment
	if err := json.Unmarshal(after, &got); err != nil {
		t.Fatal(err)
	}
	if deploymentDrifted(&got, want) {
		t.Errorf("still drifted after the patch: %+v", got.Spec)
	}
	if *got.Spec.RevisionHistoryLimit != 3 || got.Status.AvailableReplicas != 7 {
		t.Errorf("the patch changed fields the operator does not own: %+v %+v", got.Spec.RevisionHistoryLimit, got.Status)
	}
}

// testLogger is the Logger the reconcile tests start from.
func testLogger() *examplev2.Logger {
	return &examplev2.Logger{
		ObjectMeta: metav1.ObjectMeta{Name: "heartbeat", Namespace: "lab"},
		Spec:       examplev2.LoggerSpec{Name: `x"; rm -rf / #`, Interval: "5s", Replicas: ptr.To[int32](2)},
	}
}

package controller

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	examplev2 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v2"
)

// The labels of docs/behaviour.md. nameLabel and instanceLabel mark the pods
// of one Logger (and select them); managedByLabel marks the Deployments this
// operator made, which is what it watches.
const (
	nameLabel         = "app.kubernetes.io/name"
	instanceLabel     = "app.kubernetes.io/instance"
	managedByLabel    = "app.kubernetes.io/managed-by"
	managedBy         = "operator-flow"
	managedBySelector = managedByLabel + "=" + managedBy
)

const (
	containerName = "logger"
	// loggerScript prints the activity line. spec.name and spec.interval
	// reach it only as environment variables, never pasted into the script,
	// so no Logger can inject shell commands.
	loggerScript = `while true; do echo "$(date -u +%FT%TZ) $LOGGER_NAME is active"; sleep "$TIME_INTERVAL"; done`
	// nobody: an unprivileged user that exists in busybox.
	runAsUser = 65534
)

// sleepSeconds is spec.interval in seconds, as the script's sleep takes it:
// "5" for 5s, "1.59" for 1590ms, as stage 06 wrote timeInterval for whole
// seconds. The fraction is written digit by digit from the nanoseconds: a
// float64 would say 1.5899999999999999. checkSpec has refused an interval
// that does not parse.
func sleepSeconds(interval string) string {
	d, _ := examplev2.ParseInterval(interval) // checked by checkSpec
	s := strconv.FormatInt(int64(d/time.Second), 10)
	if frac := d % time.Second; frac != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%09d", frac), "0")
	}
	return s
}

// deploymentName is the name of a Logger's Deployment.
func deploymentName(logger string) string { return "logger-" + logger }

// desiredDeployment is the Deployment a Logger asks for (docs/behaviour.md).
func desiredDeployment(namespace, logger string, spec examplev2.LoggerSpec, image string) *appsv1.Deployment {
	pods := map[string]string{nameLabel: "logger", instanceLabel: logger}
	labels := map[string]string{nameLabel: "logger", instanceLabel: logger, managedByLabel: managedBy}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: deploymentName(logger), Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			// nil when the Logger was stored before the CRD defaulted it.
			Replicas: ptr.To(ptr.Deref(spec.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: pods},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: pods},
				Spec: corev1.PodSpec{
					// The logger never calls the API server: no token in its pods.
					AutomountServiceAccountToken: ptr.To(false),
					// The Pod Security "restricted" profile, plus this course's own
					// hardening: user 65534 and (below) a read-only root filesystem.
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](runAsUser),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    containerName,
						Image:   image,
						Command: []string{"/bin/sh", "-c", loggerScript},
						Env: []corev1.EnvVar{
							{Name: "LOGGER_NAME", Value: spec.Name},
							{Name: "TIME_INTERVAL", Value: sleepSeconds(spec.Interval)},
						},
						// What a shell loop needs, declared, so that the scheduler counts
						// it and a runaway pod cannot take the node's memory.
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5m"), corev1.ResourceMemory: resource.MustParse("8Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

// deploymentDrifted reports whether have differs from want in what
// docs/behaviour.md says the operator keeps: replicas, and the container's
// image, command and environment. Everything else may differ: the API server
// fills in defaults, and other controllers write status and annotations.
func deploymentDrifted(have, want *appsv1.Deployment) bool {
	if !ptr.Equal(have.Spec.Replicas, want.Spec.Replicas) {
		return true
	}
	h, w := have.Spec.Template.Spec.Containers, want.Spec.Template.Spec.Containers
	if len(h) != 1 || h[0].Name != w[0].Name {
		return true
	}
	return h[0].Image != w[0].Image ||
		!slices.Equal(h[0].Command, w[0].Command) ||
		!slices.Equal(h[0].Args, w[0].Args) ||
		!slices.Equal(h[0].Env, w[0].Env)
}

// repairPatch puts a drifted Deployment right: a JSON merge patch of the
// fields the operator owns, replicas and the pod template (whose list of
// containers a merge patch replaces whole). A patch carries no
// resourceVersion, so it cannot conflict with the Deployment controller,
// which writes the Deployment's status several times during every rollout;
// an Update of the whole object would fail with 409 Conflict whenever it
// came between that controller's writes.
func repairPatch(want *appsv1.Deployment) []byte {
	// Marshalling these API types cannot fail.
	patch, _ := json.Marshal(map[string]any{
		"spec": map[string]any{"replicas": want.Spec.Replicas, "template": want.Spec.Template},
	})
	return patch
}

// loggerState is status.state of a Logger whose Deployment is d (nil when
// there is none).
func loggerState(d *appsv1.Deployment) string {
	if d != nil && d.Status.AvailableReplicas > 0 {
		return examplev2.StateAvailable
	}
	return examplev2.StateUnavailable
}

package controller

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	examplev1 "github.com/operator-flow/operator-flow/06-status-and-owners/api/example/v1"
)

// The labels every stage puts on a Logger's Deployment and its pods
// (docs/behaviour.md). The owner reference, not a label, is what ties a
// Deployment to its Logger now; the labels remain for people and selectors,
// and mark an orphaned Deployment as one the operator may adopt.
const (
	labelName      = "app.kubernetes.io/name"
	labelInstance  = "app.kubernetes.io/instance"
	labelManagedBy = "app.kubernetes.io/managed-by"

	appName   = "logger"
	managedBy = "operator-flow"

	containerName = "logger"
	// loggerScript prints one activity line per interval. spec.name and
	// spec.timeInterval reach it only as environment variables, never pasted
	// into the script, so no Logger can inject shell commands.
	loggerScript = `while true; do echo "$(date -u +%FT%TZ) $LOGGER_NAME is active"; sleep "$TIME_INTERVAL"; done`
	// nobody: an unprivileged user that exists in busybox.
	nonRootUID = 65534
)

// deploymentName is the name of a Logger's Deployment.
func deploymentName(loggerName string) string { return "logger-" + loggerName }

// podLabels select a Logger's pods; the Deployment's selector uses them.
func podLabels(loggerName string) map[string]string {
	return map[string]string{labelName: appName, labelInstance: loggerName}
}

// desiredDeployment is the Deployment a Logger asks for, built from the
// Logger alone so that it is easy to test.
func desiredDeployment(l *examplev1.Logger, image string) *appsv1.Deployment {
	replicas := int32(1) // the CRD's default; only a Logger stored before the default existed lacks it
	if l.Spec.Replicas != nil {
		replicas = *l.Spec.Replicas
	}
	labels := podLabels(l.Name)
	labels[labelManagedBy] = managedBy
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:      deploymentName(l.Name),
			Namespace: l.Namespace,
			Labels:    labels,
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: podLabels(l.Name)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels(l.Name)},
				Spec: corev1.PodSpec{
					// The Pod Security "restricted" profile.
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](nonRootUID),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    containerName,
						Image:   image,
						Command: []string{"/bin/sh", "-c", loggerScript},
						Env: []corev1.EnvVar{
							{Name: "LOGGER_NAME", Value: l.Spec.Name},
							{Name: "TIME_INTERVAL", Value: strconv.Itoa(int(l.Spec.TimeInterval))},
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							ReadOnlyRootFilesystem:   ptr.To(true),
						},
					}},
				},
			},
		},
	}
}

// drifted reports whether the Deployment no longer does what the Logger asks:
// its replicas, or the logger container's image, command or environment,
// differ. Only these fields are compared, because the API server fills in
// defaults everywhere else; comparing whole objects would see drift on
// every reconcile and rewrite the Deployment forever.
func drifted(have, want *appsv1.Deployment) bool {
	if !equality.Semantic.DeepEqual(have.Spec.Replicas, want.Spec.Replicas) {
		return true
	}
	h, w := loggerContainer(have), loggerContainer(want)
	return h == nil ||
		h.Image != w.Image ||
		!equality.Semantic.DeepEqual(h.Command, w.Command) ||
		!equality.Semantic.DeepEqual(h.Env, w.Env)
}

// repair puts the desired replicas and pod template into have, keeping
// everything else the API server holds (resourceVersion, status, defaults).
func repair(have, want *appsv1.Deployment) {
	have.Spec.Replicas = want.Spec.Replicas
	have.Spec.Template = want.Spec.Template
	for k, v := range want.Labels {
		if have.Labels == nil {
			have.Labels = map[string]string{}
		}
		have.Labels[k] = v
	}
}

func loggerContainer(d *appsv1.Deployment) *corev1.Container {
	for i := range d.Spec.Template.Spec.Containers {
		if d.Spec.Template.Spec.Containers[i].Name == containerName {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}

// managedFor reports whether d carries the labels this operator gives the
// Deployment of the Logger called loggerName. The operator adopts an orphan
// only when it does, never a Deployment a person created under the same name.
func managedFor(d *appsv1.Deployment, loggerName string) bool {
	return d.Labels[labelManagedBy] == managedBy && d.Labels[labelInstance] == loggerName
}

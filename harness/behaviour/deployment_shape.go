package behaviour

import (
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// wantDeployment is what a Logger's Deployment must say, per docs/behaviour.md.
type wantDeployment struct {
	logger   string // the Logger's metadata.name
	printed  string // spec.name
	interval int64  // spec.timeInterval
	replicas int32  // spec.replicas
	image    string
}

// problems lists every way d differs from w; none means d is right.
func (w wantDeployment) problems(d *appsv1.Deployment) []string {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }

	podLabels := map[string]string{"app.kubernetes.io/name": "logger", "app.kubernetes.io/instance": w.logger}
	for k, v := range podLabels {
		if d.Labels[k] != v {
			add("label %s=%q, want %q", k, d.Labels[k], v)
		}
		if d.Spec.Selector == nil || d.Spec.Selector.MatchLabels[k] != v {
			add("selector %s, want %q", k, v)
		}
		if d.Spec.Template.Labels[k] != v {
			add("pod label %s=%q, want %q", k, d.Spec.Template.Labels[k], v)
		}
	}
	if got := d.Labels["app.kubernetes.io/managed-by"]; got != "operator-flow" {
		add("label app.kubernetes.io/managed-by=%q, want operator-flow", got)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != w.replicas {
		add("spec.replicas=%v, want %d", deref(d.Spec.Replicas), w.replicas)
	}

	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 || pod.Containers[0].Name != containerName {
		add("want exactly one container named %q, have %d", containerName, len(pod.Containers))
		return p
	}
	c := pod.Containers[0]
	if c.Image != w.image {
		add("image %q, want %q", c.Image, w.image)
	}
	// Command and args together are what runs; how a stage splits them is
	// its own business. The script is fixed: spec.name reaches it only
	// through the environment, so no Logger can inject shell commands.
	if got, want := append(slices.Clone(c.Command), c.Args...), []string{"/bin/sh", "-c", loggerScript}; !slices.Equal(got, want) {
		add("command %q, want %q", got, want)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["LOGGER_NAME"] != w.printed || env["TIME_INTERVAL"] != strconv.FormatInt(w.interval, 10) {
		add("env LOGGER_NAME=%q TIME_INTERVAL=%q, want %q and %q", env["LOGGER_NAME"], env["TIME_INTERVAL"], w.printed, strconv.FormatInt(w.interval, 10))
	}
	p = append(p, restrictedProblems(pod.SecurityContext, c.SecurityContext)...)
	// The logger never calls the API server, so its pods get no token; and
	// it declares what it needs.
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		add("automountServiceAccountToken=%v, want false", deref(pod.AutomountServiceAccountToken))
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		add("resources %v, want CPU and memory requests and a memory limit", c.Resources)
	}
	return p
}

// restrictedProblems checks the effective security settings of the container
// (its own, else the pod's) against docs/behaviour.md: the Pod Security
// "restricted" profile, plus this course's hardening (user 65534, a
// read-only root filesystem), which "restricted" does not ask for.
func restrictedProblems(pod *corev1.PodSecurityContext, c *corev1.SecurityContext) []string {
	if pod == nil {
		pod = &corev1.PodSecurityContext{}
	}
	if c == nil {
		c = &corev1.SecurityContext{}
	}
	var p []string
	if v := first(c.RunAsNonRoot, pod.RunAsNonRoot); v == nil || !*v {
		p = append(p, "runAsNonRoot is not true")
	}
	if v := first(c.RunAsUser, pod.RunAsUser); v == nil || *v != runAsUser {
		p = append(p, fmt.Sprintf("runAsUser=%v, want %d", deref(v), runAsUser))
	}
	if c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation {
		p = append(p, "allowPrivilegeEscalation is not false")
	}
	if c.ReadOnlyRootFilesystem == nil || !*c.ReadOnlyRootFilesystem {
		p = append(p, "readOnlyRootFilesystem is not true")
	}
	if c.Capabilities == nil || !slices.Equal(c.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(c.Capabilities.Add) > 0 {
		p = append(p, fmt.Sprintf("capabilities %+v, want drop [ALL] and add nothing", c.Capabilities))
	}
	if v := first(c.SeccompProfile, pod.SeccompProfile); v == nil || v.Type != corev1.SeccompProfileTypeRuntimeDefault {
		p = append(p, "seccompProfile is not RuntimeDefault")
	}
	return p
}

func first[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func deref[T any](p *T) any {
	if p == nil {
		return "<unset>"
	}
	return *p
}

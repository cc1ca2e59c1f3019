package e2e

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/operator-flow/operator-flow/harness"
)

// request is one row of docs/reliability.md's table "What the operator's
// account can write under module A1's policies": a request the account
// sends (a dry run), whether the API server admits it, and, if not, what
// its refusal names.
type request struct {
	what    string
	allowed bool
	names   string
	send    func(ctx context.Context) error
}

// fixtures are the objects the requests act on, made by an admin in ns:
// the Logger own and its Deployment logger-own as stage 06 writes it;
// foreign, an admin's Deployment; logger-unlabelled, controlled by the
// Logger unlabelled but without the managed-by label; logger-orphan,
// labelled, with no controller, and its Logger orphan; logger-tolerated,
// the Logger tolerated's, to which the admin added a toleration; and the
// Logger fresh, with no Deployment yet.
type fixtures struct {
	ns                                        string
	own, unlabelled, orphan, fresh, tolerated types.UID
	asAccount                                 *kubernetes.Clientset
}

// requests are the rows of the table, in its order.
func requests(f fixtures) []request {
	deploy := f.asAccount.AppsV1().Deployments
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	create := func(ns string, edit func(d *appsv1.Deployment)) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			d := operatorDeployment(ns, "fresh", f.fresh)
			edit(d)
			_, err := deploy(ns).Create(ctx, d, dry)
			return err
		}
	}
	patch := func(name string, pt types.PatchType, data string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			_, err := deploy(f.ns).Patch(ctx, name, pt, []byte(data), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "attacker"})
			return err
		}
	}
	container := func(d *appsv1.Deployment) *corev1.Container { return &d.Spec.Template.Spec.Containers[0] }
	secret := &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "admin-bot-token"}, Key: "token"}
	dangling, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{{
		APIVersion: "example.com/v1", Kind: "Logger", Name: "own", UID: "00000000-0000-0000-0000-000000000000", Controller: ptr.To(true),
	}}}})
	// A strategic merge patch merges owner references by uid; one
	// controller is all the API server's validation allows.
	second, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{{
		APIVersion: "example.com/v1", Kind: "Logger", Name: "ghost", UID: "00000000-0000-0000-0000-000000000000",
	}}}})
	adopt, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": []metav1.OwnerReference{
		loggerReference("orphan", f.orphan),
	}}})
	repair, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": 1, "template": operatorDeployment(f.ns, "own", f.own).Spec.Template}})
	repairTolerated, _ := json.Marshal(map[string]any{"spec": map[string]any{"replicas": 1, "template": operatorDeployment(f.ns, "tolerated", f.tolerated).Spec.Template}})
	managedBy := `{"metadata":{"labels":{"app.kubernetes.io/managed-by":"operator-flow"}}}`
	return []request{
		{"create a Logger's Deployment as stage 06 writes it", true, "", create(f.ns, func(*appsv1.Deployment) {})},
		{"create the same in kube-system, for a Logger that exists nowhere there", true, "", create("kube-system", func(*appsv1.Deployment) {})},
		{"put the managed-by label back on a Deployment a Logger controls", true, "", patch("logger-unlabelled", types.MergePatchType, managedBy)},
		{"repair the replicas and pod template of a Logger's Deployment", true, "", patch("logger-own", types.MergePatchType, string(repair))},
		{"adopt a labelled Deployment without a controller, for the Logger it is named after", true, "", patch("logger-orphan", types.MergePatchType, string(adopt))},
		{"create one in kube-system with hostPID, nodeName and a privileged container that mounts a hostPath", false, "hostPID, nodeName, volumes, privileged, volumeMounts", create("kube-system", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.HostPID = true
			d.Spec.Template.Spec.NodeName = "kwok-control-plane"
			d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "etc", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/etc/kubernetes"}}}}
			privileged(container(d))
			container(d).VolumeMounts = []corev1.VolumeMount{{Name: "etc", MountPath: "/host"}}
		})},
		{"create one that mounts a Secret", false, "volumes, volumeMounts", create(f.ns, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "admin-bot-token"}}}}
			container(d).VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "/s"}}
		})},
		{"create one that reads a Secret with envFrom", false, "envFrom", create(f.ns, func(d *appsv1.Deployment) {
			container(d).EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: secret.LocalObjectReference}}}
		})},
		{"create one that reads a Secret with env valueFrom", false, "env valueFrom", create(f.ns, func(d *appsv1.Deployment) {
			container(d).Env = append(container(d).Env, corev1.EnvVar{Name: "T", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: secret}})
		})},
		{"create one with hostNetwork, a hostPort and an added capability", false, "hostNetwork, capabilities.add, hostPort", create(f.ns, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.HostNetwork = true
			container(d).Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
			container(d).SecurityContext.Capabilities.Add = []corev1.Capability{"NET_ADMIN"}
		})},
		{"create one with an init container", false, "initContainers", create(f.ns, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.InitContainers = []corev1.Container{*container(d)}
		})},
		{"create one that runs another image", false, "(busybox:1.37), not busybox:1.36", create(f.ns, func(d *appsv1.Deployment) {
			container(d).Image = "busybox:1.36"
		})},
		{"create one with automountServiceAccountToken true", false, "automountServiceAccountToken other than false", create(f.ns, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.AutomountServiceAccountToken = ptr.To(true)
		})},
		{"create one with automountServiceAccountToken unset", false, "automountServiceAccountToken other than false", create(f.ns, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.AutomountServiceAccountToken = nil
		})},
		{"create one whose pods run as another ServiceAccount", false, "default ServiceAccount, not admin-bot", create(f.ns, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.ServiceAccountName = "admin-bot"
		})},
		{"the same through the deprecated field serviceAccount", false, "default ServiceAccount, not admin-bot", create(f.ns, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.DeprecatedServiceAccount = "admin-bot"
		})},
		{"create one without the managed-by label", false, "labelled app.kubernetes.io/managed-by=operator-flow", create(f.ns, func(d *appsv1.Deployment) {
			delete(d.Labels, "app.kubernetes.io/managed-by")
		})},
		{"create one with no owner reference", false, "may not set these ownerReferences on logger-fresh", create(f.ns, func(d *appsv1.Deployment) {
			d.OwnerReferences = nil
		})},
		{"add the managed-by label to an admin's Deployment", false, "and foreign is not", patch("foreign", types.MergePatchType, managedBy)},
		{"scale an admin's Deployment to 0", false, "labelled app.kubernetes.io/managed-by=operator-flow", patch("foreign", types.MergePatchType, `{"spec":{"replicas":0}}`)},
		{"point a Logger's Deployment at a Logger that does not exist", false, "may not set these ownerReferences on logger-own", patch("logger-own", types.MergePatchType, string(dangling))},
		// What an attacker holding the token tries next.
		{"add a second owner reference, to a Logger that does not exist, with a strategic merge patch", false, "may not set these ownerReferences on logger-own", patch("logger-own", types.StrategicMergePatchType, string(second))},
		{"add the managed-by label to an admin's Deployment with a JSON patch", false, "and foreign is not", patch("foreign", types.JSONPatchType,
			`[{"op":"add","path":"/metadata/labels","value":{"app.kubernetes.io/managed-by":"operator-flow"}}]`)},
		{"server-side apply a privileged Deployment", false, "privileged", func(ctx context.Context) error {
			d := operatorDeployment(f.ns, "own", f.own)
			d.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}
			d.Name = "logger-applied"
			d.OwnerReferences[0].Name = "applied"
			privileged(container(d))
			b, err := json.Marshal(d)
			if err != nil {
				return err
			}
			_, err = deploy(f.ns).Patch(ctx, d.Name, types.ApplyPatchType, b, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "attacker", Force: ptr.To(true)})
			return err
		}},
		{"create one in kube-system whose pods carry kube-dns's label, for its Service's traffic", false, "pod labels or a selector other than the Logger's", create("kube-system", func(d *appsv1.Deployment) {
			d.Spec.Template.Labels["k8s-app"] = "kube-dns"
		})},
		{"create one that runs another command", false, "a command or args other than the logger's", create(f.ns, func(d *appsv1.Deployment) {
			container(d).Command = []string{"/bin/sh", "-c", "nc -l -p 8053"}
		})},
		{"create one with another environment variable", false, "env other than LOGGER_NAME and TIME_INTERVAL", create(f.ns, func(d *appsv1.Deployment) {
			container(d).Env = append(container(d).Env, corev1.EnvVar{Name: "LD_PRELOAD", Value: "/tmp/x.so"})
		})},
		{"create one that may run as root, with privilege escalation", false, "runAsNonRoot other than true, allowPrivilegeEscalation other than false", create(f.ns, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.SecurityContext.RunAsNonRoot = nil
			container(d).SecurityContext.AllowPrivilegeEscalation = nil
		})},
		{"create one with a priority class that preempts other pods", false, "priorityClassName", create(f.ns, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.PriorityClassName = "system-node-critical"
		})},
		{"create one whose container runs other commands from a postStart hook and an exec probe, and whose kubelet probes an address of the node's network", false, "lifecycle, livenessProbe, readinessProbe", create(f.ns, func(d *appsv1.Deployment) {
			run := &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "nc -l -p 8053"}}
			container(d).Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: run}}
			container(d).LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: run}}
			container(d).ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "169.254.169.254", Path: "/", Port: intstr.FromInt32(80)}}}
		})},
		{"create one in kube-system whose pods tolerate the control-plane taint and select a control-plane node", false, "nodeSelector, tolerations", create("kube-system", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.NodeSelector = map[string]string{"node-role.kubernetes.io/control-plane": ""}
			d.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		})},
		{"create one whose pod runs without seccomp, AppArmor or SELinux confinement", false, "seccompProfile other than RuntimeDefault, appArmorProfile, seLinuxOptions", create(f.ns, func(d *appsv1.Deployment) {
			container(d).SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
			container(d).SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
			container(d).SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"}
		})},
		{"the same for AppArmor through the deprecated annotation, which the API server copies to a new pod's field", false, "appArmorProfile", create(f.ns, func(d *appsv1.Deployment) {
			d.Spec.Template.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/logger": "unconfined"}
		})},
		{"create one whose container keeps the runtime's default capabilities", false, "capabilities.drop other than ALL", create(f.ns, func(d *appsv1.Deployment) {
			container(d).SecurityContext.Capabilities = nil
		})},
		{"create one that pulls its image with another team's pull secret", false, "imagePullSecrets", create(f.ns, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "other-team-registry"}}
		})},
		{"create one whose pods share another team's ResourceClaim", false, "resourceClaims", create(f.ns, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("other-team-gpu")}}
			container(d).Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		})},
		{"create one whose container may take a node's memory", false, "resources other than the logger's", create(f.ns, func(d *appsv1.Deployment) {
			container(d).Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1Ti")
		})},
		{"repair a Logger's Deployment to which an admin added a toleration (the merge patch keeps it)", false, "tolerations", patch("logger-tolerated", types.MergePatchType, string(repairTolerated))},
		{"create one with a thousand replicas", false, "replicas over 10", create(f.ns, func(d *appsv1.Deployment) {
			d.Spec.Replicas = ptr.To[int32](1000)
		})},
		// RBAC's answers, for the subresources and kinds the policies do
		// not match.
		{"scale a Deployment through deployments/scale", false, `cannot patch resource "deployments/scale"`, func(ctx context.Context) error {
			_, err := f.asAccount.AppsV1().Deployments(f.ns).Patch(ctx, "foreign", types.MergePatchType, []byte(`{"spec":{"replicas":0}}`),
				metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "scale")
			return err
		}},
		{"patch deployments/status", false, `cannot patch resource "deployments/status"`, func(ctx context.Context) error {
			_, err := f.asAccount.AppsV1().Deployments(f.ns).Patch(ctx, "foreign", types.MergePatchType, []byte(`{"status":{}}`),
				metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "status")
			return err
		}},
		{"delete a Deployment", false, `cannot delete resource "deployments"`, func(ctx context.Context) error {
			return f.asAccount.AppsV1().Deployments(f.ns).Delete(ctx, "foreign", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		}},
		{"create a ReplicaSet", false, `cannot create resource "replicasets"`, func(ctx context.Context) error {
			d := operatorDeployment(f.ns, "own", f.own)
			_, err := f.asAccount.AppsV1().ReplicaSets(f.ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: d.ObjectMeta,
				Spec: appsv1.ReplicaSetSpec{Selector: d.Spec.Selector, Template: d.Spec.Template}}, dry)
			return err
		}},
		{"create a Pod", false, `cannot create resource "pods"`, func(ctx context.Context) error {
			_, err := f.asAccount.CoreV1().Pods(f.ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec: operatorDeployment(f.ns, "own", f.own).Spec.Template.Spec}, dry)
			return err
		}},
		{"change the images parameter", false, `cannot patch resource "namespaces"`, func(ctx context.Context) error {
			_, err := f.asAccount.CoreV1().Namespaces().Patch(ctx, "operator-flow-admission", types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"operator-flow/logger-images":"evil:latest"}}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}},
	}
}

// privileged makes c privileged; the API server refuses a privileged
// container that does not allow privilege escalation.
func privileged(c *corev1.Container) {
	c.SecurityContext.Privileged = ptr.To(true)
	c.SecurityContext.AllowPrivilegeEscalation = nil
}

// operatorDeployment is the Deployment stage 06's desiredDeployment
// (06-status-and-owners/internal/controller/deployment.go) writes for the
// Logger named logger with uid in ns, with the Logger as its controller.
// TestOperatorAccountNarrowed's operator shows the real one passes.
func operatorDeployment(ns, logger string, uid types.UID) *appsv1.Deployment {
	pods := map[string]string{"app.kubernetes.io/name": "logger", "app.kubernetes.io/instance": logger}
	labels := map[string]string{"app.kubernetes.io/name": "logger", "app.kubernetes.io/instance": logger, "app.kubernetes.io/managed-by": "operator-flow"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "logger-" + logger, Namespace: ns, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{loggerReference(logger, uid)}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: pods},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: pods},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65534),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:    "logger",
						Image:   "busybox:1.37",
						Command: []string{"/bin/sh", "-c", `while true; do echo "$(date -u +%FT%TZ) $LOGGER_NAME is active"; sleep "$TIME_INTERVAL"; done`},
						Env:     []corev1.EnvVar{{Name: "LOGGER_NAME", Value: logger}, {Name: "TIME_INTERVAL", Value: "10"}},
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

// loggerReference is the owner reference controllerutil.SetControllerReference
// writes for the Logger.
func loggerReference(logger string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Logger", Name: logger, UID: uid,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// documentedRequests reads the table of docs/reliability.md's section
// "What the operator's account can write under module A1's policies": each
// row a request, yes or no, and what the refusal names.
func documentedRequests(t *testing.T) []request {
	t.Helper()
	b, err := os.ReadFile(harness.RepoPath("docs", "reliability.md"))
	must(t, err)
	_, section, ok := strings.Cut(string(b), "\n"+requestsSection+"\n")
	if !ok {
		t.Fatalf("docs/reliability.md has no section %q", requestsSection)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []request
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "| "), "|"), " | ")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || cells[0] == "the account's request (a dry run)" {
			continue
		}
		if len(cells) != 3 || (cells[1] != "yes" && cells[1] != "no") {
			t.Fatalf("docs/reliability.md: cannot read the row %q (want: request | yes or no | what the refusal names)", line)
		}
		rows = append(rows, request{what: cells[0], allowed: cells[1] == "yes", names: strings.Trim(cells[2], "`")})
	}
	return rows
}

const requestsSection = "## What the operator's account can write under module A1's policies"

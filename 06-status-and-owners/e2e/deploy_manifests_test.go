package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
	"sigs.k8s.io/yaml"

	"github.com/operator-flow/operator-flow/harness"
)

// TestDeployManifestsAreAdmitted renders config/default with kustomize and
// creates its ServiceAccount and Deployment in a namespace carrying the
// labels of config/default/namespace.yaml. The API server's Pod Security
// admission must accept the pods without a warning. kwok runs no containers,
// so this checks the manifests, not the image: `make deploy-6 CLUSTER=kind`
// runs the real thing.
func TestDeployManifestsAreAdmitted(t *testing.T) {
	if os.Getenv("CLUSTER") == "kind" {
		// On kind the pods would run: they need the image loaded and the
		// RBAC bound, which is what make deploy-6 does and checks.
		t.Skip("on kind, make deploy-6 deploys and checks the real image with its RBAC; this test checks the manifests on kwok")
	}
	f := features.New("in-cluster manifests").
		Assess("the operator's pods are admitted under Pod Security restricted", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, err := harness.NewClients(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			objs := renderDefault(t)
			ns := c.Namespace(t, "deploy")
			nsLabels := objs["Namespace"].GetLabels()
			if nsLabels["pod-security.kubernetes.io/enforce"] != "restricted" {
				t.Fatalf("config/default/namespace.yaml does not enforce restricted: %v", nsLabels)
			}
			patch, _ := yaml.YAMLToJSON([]byte(fmt.Sprintf("metadata: {labels: %s}", mustJSON(nsLabels))))
			if _, err := c.Kube.CoreV1().Namespaces().Patch(ctx, ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}

			// Keep every warning the API server sends back: a Deployment
			// whose pods would break the profile is stored, with a warning;
			// only its pods are refused.
			warnings := &warningRecorder{}
			warnCfg := rest.CopyConfig(c.Config)
			warnCfg.WarningHandler = warnings
			kube := kubernetes.NewForConfigOrDie(warnCfg)

			var sa corev1.ServiceAccount
			var dep appsv1.Deployment
			fromUnstructured(t, objs["ServiceAccount"], &sa)
			fromUnstructured(t, objs["Deployment"], &dep)
			sa.Namespace, dep.Namespace = ns, ns
			if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &sa, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := kube.AppsV1().Deployments(ns).Create(ctx, &dep, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if w := warnings.all(); len(w) > 0 {
				t.Errorf("the API server warned about the Deployment: %q", w)
			}
			harness.Eventually(t, converge, "both replicas admitted and available", func(ctx context.Context) (bool, string, error) {
				d, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, dep.Name, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				var failures []string
				for _, cond := range d.Status.Conditions {
					if cond.Type == appsv1.DeploymentReplicaFailure && cond.Status == corev1.ConditionTrue {
						failures = append(failures, cond.Message)
					}
				}
				return d.Status.AvailableReplicas == *dep.Spec.Replicas,
					fmt.Sprintf("available %d of %d %s", d.Status.AvailableReplicas, *dep.Spec.Replicas, strings.Join(failures, "; ")), nil
			})

			// The check has teeth: the same pod, allowed to run as root, is
			// refused outright.
			root := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "as-root", Namespace: ns},
				Spec:       *dep.Spec.Template.Spec.DeepCopy(),
			}
			root.Spec.SecurityContext.RunAsNonRoot = ptr.To(false)
			if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, root, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("a root pod in the restricted namespace: err=%v, want Forbidden", err)
			}
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// renderDefault runs `kubectl kustomize config/default` (./bin/kubectl,
// offline) and returns its objects by kind.
func renderDefault(t *testing.T) map[string]*unstructured.Unstructured {
	t.Helper()
	out, err := exec.Command(harness.RepoPath("bin", "kubectl"), "kustomize", harness.RepoPath("06-status-and-owners", "config", "default")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/default: %v", err)
	}
	objs := map[string]*unstructured.Unstructured{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		objs[u.GetKind()] = u
	}
	for _, kind := range []string{"Namespace", "ServiceAccount", "Deployment"} {
		if objs[kind] == nil {
			t.Fatalf("config/default renders no %s", kind)
		}
	}
	return objs
}

func fromUnstructured(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		panic(err)
	}
	j, _ := yaml.YAMLToJSON(b)
	return string(j)
}

// warningRecorder keeps the warnings the API server sends with its answers.
type warningRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	w.msgs = append(w.msgs, msg)
	w.mu.Unlock()
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

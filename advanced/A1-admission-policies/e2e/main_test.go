// Package e2e checks module A1 against a real API server: the admission
// policies of config/admission, and the validation ratcheting of the CRDs
// in config/crd. Stage 06's operator runs beside them, unchanged.
//
// Policies and bindings are cluster-wide, and one cluster serves every
// package's tests: each test installs its own copies, renamed and bound to
// its own namespaces only, and deletes them when it ends.
package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"

	"github.com/operator-flow/operator-flow/harness"
)

const module = "advanced/A1-admission-policies"

func TestMain(m *testing.M) { harness.Main(m, module+"/config/crd") }

// settle is how long a change of policy, binding, namespace label or CRD
// may take to reach the API server's admission: each is read from an
// informer, not at the request.
const settle = 30 * time.Second

// scopeLabel marks a test's namespaces; its bindings select them.
const scopeLabel = "operator-flow/e2e-admission"

var loggers = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "loggers"}

var bindingKind = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"}

// policyFile is a file of config/admission: in this module, or in the copy
// that MODULE_DIR names (`make check-A1` points it at workspace/).
func policyFile(name string) string {
	if dir := os.Getenv("MODULE_DIR"); dir != "" {
		return harness.RepoPath(dir, "config", "admission", name)
	}
	return harness.RepoPath(module, "config", "admission", name)
}

func clients(t *testing.T) *harness.Clients {
	t.Helper()
	c, err := harness.NewClients(harness.Env().EnvConf().Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// install creates the policies and bindings of one file of config/admission
// for this test alone: each renamed with the suffix scope, each binding
// limited to the namespaces labelled scopeLabel=scope (unless scope is
// cluster-wide, ""), and deletes them when the test ends. edit may change
// each object (renamed already) before it is created.
func install(t *testing.T, c *harness.Clients, file, scope string, edit func(o *unstructured.Unstructured)) (names map[string]string) {
	t.Helper()
	objs, err := harness.ReadObjects(policyFile(file))
	if err != nil {
		t.Fatal(err)
	}
	suffix := scope
	if suffix == "" {
		suffix = rand.String(5)
	}
	names = map[string]string{}
	for _, o := range objs {
		kind := o.GetKind()
		if !strings.HasSuffix(kind, "AdmissionPolicy") && !strings.HasSuffix(kind, "AdmissionPolicyBinding") {
			continue
		}
		names[o.GetName()] = o.GetName() + "-" + suffix
		o.SetName(names[o.GetName()])
		if strings.HasSuffix(kind, "Binding") {
			policy, _, _ := unstructured.NestedString(o.Object, "spec", "policyName")
			must(t, unstructured.SetNestedField(o.Object, policy+"-"+suffix, "spec", "policyName"))
			if scope != "" {
				must(t, unstructured.SetNestedStringMap(o.Object, map[string]string{scopeLabel: scope},
					"spec", "matchResources", "namespaceSelector", "matchLabels"))
			}
		}
		if edit != nil {
			edit(o)
		}
		r, err := c.Resource(o.GroupVersionKind(), "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Create(context.Background(), o, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s from %s: %v", kind, o.GetName(), file, err)
		}
		t.Cleanup(func() {
			if err := r.Delete(context.Background(), o.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s %s: %v", kind, o.GetName(), err)
			}
		})
	}
	if len(names) == 0 {
		t.Fatalf("%s holds no policy and no binding", policyFile(file))
	}
	return names
}

// namespace creates a namespace in scope with labels, deleted when the test
// ends.
func namespace(t *testing.T, c *harness.Clients, scope string, labels map[string]string) string {
	t.Helper()
	l := map[string]string{"operator-flow/e2e": "true", scopeLabel: scope}
	for k, v := range labels {
		l[k] = v
	}
	ns, err := c.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "a1-", Labels: l},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// logger is a Logger that prints its own name every 10 s.
func logger(name string, replicas int32, labels map[string]string) *unstructured.Unstructured {
	l := harness.NewLogger(name, name, 10, int64(replicas))
	if len(labels) > 0 {
		l.SetLabels(labels)
	}
	return l
}

// dryRun asks the API server to create o in ns, through every admission
// step, without storing it.
func dryRun(ctx context.Context, c dynamic.Interface, ns string, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return c.Resource(loggers).Namespace(ns).Create(ctx, o.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
}

// waitRefused waits until a dry-run create of o in ns is refused with a
// message that holds every part of says.
func waitRefused(t *testing.T, c *harness.Clients, ns string, o *unstructured.Unstructured, says ...string) {
	t.Helper()
	harness.Eventually(t, settle, "a create of "+o.GetName()+" to be refused with "+strings.Join(says, ", "), func(ctx context.Context) (bool, string, error) {
		_, err := dryRun(ctx, c.Dynamic, ns, o)
		if err == nil {
			return false, "admitted", nil
		}
		return containsAll(err.Error(), says), err.Error(), nil
	})
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

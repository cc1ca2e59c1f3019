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
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"

	"github.com/operator-flow/operator-flow/harness"
)

const module = "advanced/A1-admission-policies"

func TestMain(m *testing.M) { harness.Main(m, module+"/config/crd") }

// settle is how long a change of policy, binding, namespace label or CRD
// may take to take effect in the API server: each is read from an informer
// (a CRD by the handler that validates its objects), not at the request.
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

// The sentinels: a validating and a mutating policy of the test's own,
// created after the policies under test and bound to the same namespaces.
// A namespace's label sentinelLabel=<token> makes the first refuse a
// ConfigMap named sentinel-<token>, and the second copy the token to every
// ConfigMap: ConfigMaps, which no policy under test matches, so that their
// verdicts never hide the sentinels'.
// Admission reads policies, bindings and namespaces from informers, so
// their changes take effect a little later; and an informer sees objects
// of its one resource in the order they were written, and each kind under
// test has a sentinel of the same kind created after it. So once the
// sentinels act on a token, the policies under test are in force (on these
// one-API-server clusters, bar a refresh of the policies, once a second,
// that read one just before its informer caught up: the next refresh
// mends it), and namespaceObject holds the namespace as labelled with that
// token (waitSeen). Whatever the policies under test do, the wait ends.
const sentinelLabel = "operator-flow/e2e-sentinel"

func sentinels(t *testing.T, c *harness.Clients, scope string) {
	t.Helper()
	rules := []any{map[string]any{
		"apiGroups": []any{""}, "apiVersions": []any{"v1"},
		"operations": []any{"CREATE"}, "resources": []any{"configmaps"},
	}}
	token := "namespaceObject.metadata.?labels[?'" + sentinelLabel + "'].orValue('none')"
	name := "e2e-sentinel-" + scope
	match := map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{scopeLabel: scope}}}
	objs := []map[string]any{
		{"kind": "ValidatingAdmissionPolicy", "spec": map[string]any{
			"failurePolicy":    "Fail",
			"matchConstraints": map[string]any{"resourceRules": rules},
			"validations":      []any{map[string]any{"expression": "object.metadata.name != 'sentinel-' + " + token}},
		}},
		{"kind": "ValidatingAdmissionPolicyBinding", "spec": map[string]any{
			"policyName": name, "validationActions": []any{"Deny"}, "matchResources": match,
		}},
		{"kind": "MutatingAdmissionPolicy", "spec": map[string]any{
			"failurePolicy":      "Fail",
			"reinvocationPolicy": "Never",
			"matchConstraints":   map[string]any{"resourceRules": rules},
			"mutations": []any{map[string]any{"patchType": "ApplyConfiguration", "applyConfiguration": map[string]any{
				"expression": "Object{metadata: Object.metadata{labels: {'" + sentinelLabel + "': " + token + "}}}",
			}}},
		}},
		{"kind": "MutatingAdmissionPolicyBinding", "spec": map[string]any{
			"policyName": name, "matchResources": match,
		}},
	}
	for _, o := range objs {
		o["apiVersion"] = "admissionregistration.k8s.io/v1"
		o["metadata"] = map[string]any{"name": name}
		u := &unstructured.Unstructured{Object: o}
		r, err := c.Resource(u.GroupVersionKind(), "")
		must(t, err)
		if _, err := r.Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating the sentinel %s: %v", u.GetKind(), err)
		}
		t.Cleanup(func() { _ = r.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
}

// waitSeen labels namespace ns with labels and a fresh sentinel token, and
// waits until admission acts on them: the sentinels do.
func waitSeen(t *testing.T, c *harness.Clients, ns string, labels map[string]string) {
	t.Helper()
	token := rand.String(6)
	l := map[string]string{sentinelLabel: token}
	for k, v := range labels {
		l[k] = v
	}
	labelNamespace(t, c, ns, l)
	cms := c.Kube.CoreV1().ConfigMaps(ns)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	harness.Eventually(t, settle, "admission to act on namespace "+ns+"'s labels", func(ctx context.Context) (bool, string, error) {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "sentinel-" + token}}, dry); err == nil {
			return false, "the validating sentinel has not refused sentinel-" + token + " yet", nil
		}
		got, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, dry)
		if err != nil {
			return false, err.Error(), nil
		}
		if seen := got.GetLabels()[sentinelLabel]; seen != token {
			return false, "the mutating sentinel set token " + strconv.Quote(seen) + ", not " + token, nil
		}
		return true, "", nil
	})
}

func labelNamespace(t *testing.T, c *harness.Clients, ns string, labels map[string]string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	must(t, err)
	if _, err := c.Kube.CoreV1().Namespaces().Patch(context.Background(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
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
		if _, ok := err.(apierrors.APIStatus); !ok {
			return false, "", err // the client's own (a deadline): not an answer
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

package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operator-flow/operator-flow/harness"
)

// a1Policies is where module A1 keeps its policies. The two this module
// compares itself with: the ValidatingAdmissionPolicy logger-replicas and
// the MutatingAdmissionPolicy logger-team.
var a1Policies = harness.RepoPath("advanced", "A1-admission-policies", "config", "admission")

var (
	vapGVR  = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
	vapbGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
	mapGVR  = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"}
	mapbGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"}
)

// installPolicies creates A1's two policies under names of their own
// (prefix-logger-replicas, prefix-logger-team), bound to namespace ns
// alone, and deletes them when t ends. A1's own bindings are not used: they
// match every namespace.
func installPolicies(t *testing.T, c *harness.Clients, prefix, ns string) {
	t.Helper()
	dir := a1Policies
	want := map[string]schema.GroupVersionResource{
		"ValidatingAdmissionPolicy/logger-replicas": vapGVR,
		"MutatingAdmissionPolicy/logger-team":       mapGVR,
	}
	files, err := harness.YAMLFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var created []func()
	t.Cleanup(func() {
		for i := len(created) - 1; i >= 0; i-- {
			created[i]()
		}
	})
	create := func(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
		t.Helper()
		if _, err := c.Dynamic.Resource(gvr).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s: %v", gvr.Resource, u.GetName(), err)
		}
		name := u.GetName()
		created = append(created, func() {
			if err := c.Dynamic.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %s %s: %v", gvr.Resource, name, err)
			}
		})
	}
	selector := map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: ns}}
	for _, f := range files {
		objs, err := harness.ReadObjects(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			gvr, ok := want[o.GetKind()+"/"+o.GetName()]
			if !ok {
				continue
			}
			delete(want, o.GetKind()+"/"+o.GetName())
			policy := prefix + "-" + o.GetName()
			o.SetName(policy)
			create(gvr, o)
			binding := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "admissionregistration.k8s.io/v1",
				"metadata":   map[string]any{"name": policy},
				"spec": map[string]any{
					"policyName":     policy,
					"matchResources": map[string]any{"namespaceSelector": selector},
				},
			}}
			if gvr == vapGVR {
				binding.SetKind("ValidatingAdmissionPolicyBinding")
				_ = unstructured.SetNestedStringSlice(binding.Object, []string{"Deny"}, "spec", "validationActions")
				create(vapbGVR, binding)
			} else {
				binding.SetKind("MutatingAdmissionPolicyBinding")
				create(mapbGVR, binding)
			}
		}
	}
	for missing := range want {
		t.Fatalf("%s has no %s", dir, missing)
	}
}

package webhook

import (
	"context"
	"maps"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	examplev2 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v2"
	cases "github.com/operator-flow/operator-flow/harness/admission"
)

// TestCases runs the table of harness/admission through Default and then
// ValidateCreate or ValidateUpdate, as the API server calls them: the
// mutating webhook first, then the validating one on what it returned.
func TestCases(t *testing.T) {
	if MaxReplicasLabel != cases.MaxReplicasLabel || TeamLabel != cases.TeamLabel {
		t.Fatalf("the labels differ from harness/admission's")
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-ns", Labels: tc.NamespaceLabels}}
			w := &LoggerWebhook{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(ns).Build()}
			l := &examplev2.Logger{ObjectMeta: metav1.ObjectMeta{Name: "l", Labels: maps.Clone(tc.Labels)}}
			l.Spec.Replicas = &tc.Replicas
			op := admissionv1.Create
			var old *examplev2.Logger
			if tc.OldReplicas != nil {
				op = admissionv1.Update
				old = l.DeepCopy()
				old.Spec.Replicas = tc.OldReplicas
			}
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: op, Namespace: ns.Name, Name: l.Name,
			}})
			if err := w.Default(ctx, l); err != nil {
				t.Fatalf("Default: %v", err)
			}
			var err error
			if old == nil {
				_, err = w.ValidateCreate(ctx, l)
			} else {
				_, err = w.ValidateUpdate(ctx, old, l)
			}
			if (err == nil) != tc.Allowed {
				t.Fatalf("want allowed=%v, got error %v", tc.Allowed, err)
			}
			if err != nil {
				if !apierrors.IsInvalid(err) {
					t.Errorf("want a 422 Invalid, got %v", err)
				}
				for _, part := range append([]string{"spec.replicas: Invalid value"}, tc.Says...) {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("the refusal does not say %q: %v", part, err)
					}
				}
				return
			}
			if got := l.Labels[TeamLabel]; got != tc.Team {
				t.Errorf("want team %q, got %q", tc.Team, got)
			}
		})
	}
}

// TestNoRequest: without an admission request in the context there is no
// namespace to read, and Default says so instead of guessing.
func TestNoRequest(t *testing.T) {
	w := &LoggerWebhook{}
	if err := w.Default(context.Background(), &examplev2.Logger{}); err == nil {
		t.Fatal("want an error")
	}
}

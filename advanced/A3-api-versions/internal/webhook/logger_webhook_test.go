package webhook

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
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
	"sigs.k8s.io/yaml"

	examplev1 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v1"
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

// TestNamespaceNotYetCached: a Namespace and a Logger in one `kubectl apply`
// reach the webhook before the Manager's cache has the namespace. The API
// server has checked that the namespace exists (its NamespaceLifecycle
// plugin runs before the webhooks), so the webhook reads it from the API
// server and defaults the Logger. An error of its own would be a refusal
// whatever the failurePolicy: controller-runtime answers allowed=false
// with the error's code.
func TestNamespaceNotYetCached(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := examplev2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "brand-new", Labels: map[string]string{TeamLabel: "blue"}}}
	w := &LoggerWebhook{
		Client:    fake.NewClientBuilder().WithScheme(scheme).Build(),
		APIReader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(ns).Build(),
	}
	raw, err := json.Marshal(&examplev2.Logger{
		TypeMeta:   metav1.TypeMeta{APIVersion: examplev2.SchemeGroupVersion.String(), Kind: "Logger"},
		ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: ns.Name},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Create, Namespace: ns.Name, Name: "l",
		Object: runtime.RawExtension{Raw: raw},
	}}
	if resp := admission.WithValidator[*examplev2.Logger](scheme, w).Handle(context.Background(), req); !resp.Allowed {
		t.Errorf("validating: allowed=false code=%d message=%q", resp.Result.Code, resp.Result.Message)
	}
	resp := admission.WithDefaulter[*examplev2.Logger](scheme, w).Handle(context.Background(), req)
	if !resp.Allowed {
		t.Fatalf("mutating: allowed=false code=%d message=%q", resp.Result.Code, resp.Result.Message)
	}
	patch, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"op":"add","path":"/metadata/labels","value":{"example.com/team":"blue"}}]`; string(patch) != want {
		t.Errorf("want the patch %s, got %s", want, patch)
	}
}

// TestManifestsTimeout: both webhooks of config/webhook/manifests.yaml (the
// markers above LoggerWebhook, through controller-gen) wait at most 5 s for
// an answer, not the API server's default of 10.
func TestManifestsTimeout(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var c struct {
			Kind     string `json:"kind"`
			Webhooks []struct {
				Name           string `json:"name"`
				TimeoutSeconds *int32 `json:"timeoutSeconds"`
			} `json:"webhooks"`
		}
		if err := yaml.Unmarshal([]byte(doc), &c); err != nil {
			t.Fatal(err)
		}
		for _, h := range c.Webhooks {
			n++
			if h.TimeoutSeconds == nil || *h.TimeoutSeconds > 5 {
				t.Errorf("%s %s: want timeoutSeconds at most 5, got %v", c.Kind, h.Name, h.TimeoutSeconds)
			}
		}
	}
	if n != 2 {
		t.Errorf("want 2 webhooks, found %d", n)
	}
}

// requestThrough is an admission request for op on a Logger in namespace
// team-ns, made by a client of the given version of example.com.
func requestThrough(op admissionv1.Operation, version string) context.Context {
	return admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Namespace: "team-ns", Name: "l",
		Kind:        metav1.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Logger"},
		RequestKind: &metav1.GroupVersionKind{Group: "example.com", Version: version, Kind: "Logger"},
	}})
}

// webhookWithNamespace is a LoggerWebhook whose namespace team-ns has no
// labels.
func webhookWithNamespace(t *testing.T) *LoggerWebhook {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-ns"}}
	return &LoggerWebhook{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(ns).Build()}
}

// TestIntervalOnlyThroughAnnotation: a write through v1 that changes v2's
// spec.interval but not v1's spec.timeInterval (the change came through
// examplev1.IntervalAnnotation alone) is refused; the API server would not
// bump metadata.generation for it. The same change through v2, and a v1
// change of timeInterval, pass.
func TestIntervalOnlyThroughAnnotation(t *testing.T) {
	w := webhookWithNamespace(t)
	logger := func(interval string) *examplev2.Logger {
		return &examplev2.Logger{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "team-ns"}, Spec: examplev2.LoggerSpec{Name: "l", Interval: interval}}
	}
	for _, tc := range []struct {
		name, version, old, new string
		allowed                 bool
	}{
		{"v1, the annotation set: 2s to 1600ms, timeInterval 2 both", "v1", "2s", "1600ms", false},
		{"v1, the annotation removed: 1500ms to 2s, timeInterval 2 both", "v1", "1500ms", "2s", false},
		{"v1, timeInterval 2 to 3", "v1", "1500ms", "3s", true},
		{"v1, interval unchanged", "v1", "1500ms", "1500ms", true},
		{"v2, 2s to 1600ms", "v2", "2s", "1600ms", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.ValidateUpdate(requestThrough(admissionv1.Update, tc.version), logger(tc.old), logger(tc.new))
			if (err == nil) != tc.allowed {
				t.Fatalf("want allowed=%v, got error %v", tc.allowed, err)
			}
			if err == nil {
				return
			}
			if !apierrors.IsInvalid(err) {
				t.Errorf("want a 422 Invalid, got %v", err)
			}
			for _, part := range []string{examplev1.IntervalAnnotation, "example.com/v2", "spec.timeInterval"} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("the refusal does not say %q: %v", part, err)
				}
			}
		})
	}
}

// TestAnnotationStrippedOnV2: the mutating webhook removes
// examplev1.IntervalAnnotation from a Logger written through v2, where
// spec.interval holds the interval itself, so that v2 to v1 to v2 gives
// back the object stored.
func TestAnnotationStrippedOnV2(t *testing.T) {
	w := webhookWithNamespace(t)
	for _, op := range []admissionv1.Operation{admissionv1.Create, admissionv1.Update} {
		l := &examplev2.Logger{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "team-ns", Annotations: map[string]string{
			examplev1.IntervalAnnotation: "1500ms", "other": "kept",
		}}}
		if err := w.Default(requestThrough(op, "v2"), l); err != nil {
			t.Fatalf("%s: Default: %v", op, err)
		}
		if want := map[string]string{"other": "kept"}; !maps.Equal(l.Annotations, want) {
			t.Errorf("%s: want annotations %v, got %v", op, want, l.Annotations)
		}
	}
}

// TestMigratorWriteIsNotDefaulted: the storage migrator's empty apply, an
// UPDATE with its field manager, leaves a Logger without a team label as it
// is, in a namespace that has one; the same UPDATE from another field
// manager is defaulted.
func TestMigratorWriteIsNotDefaulted(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-ns", Labels: map[string]string{TeamLabel: "platform"}}}
	w := &LoggerWebhook{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(ns).Build()}
	for manager, wantLabels := range map[string]map[string]string{
		migratorFieldManager: nil,
		"kubectl-edit":       {TeamLabel: "platform"},
	} {
		opts, err := json.Marshal(metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}, FieldManager: manager})
		if err != nil {
			t.Fatal(err)
		}
		ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Update, Namespace: "team-ns", Name: "l",
			Kind:    metav1.GroupVersionKind{Group: "example.com", Version: "v2", Kind: "Logger"},
			Options: runtime.RawExtension{Raw: opts},
		}})
		l := &examplev2.Logger{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "team-ns"}}
		if err := w.Default(ctx, l); err != nil {
			t.Fatalf("field manager %s: Default: %v", manager, err)
		}
		if !maps.Equal(l.Labels, wantLabels) {
			t.Errorf("an UPDATE by field manager %s: want labels %v, got %v", manager, wantLabels, l.Labels)
		}
	}
}

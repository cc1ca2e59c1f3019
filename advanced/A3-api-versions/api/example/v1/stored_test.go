package v1

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"

	v2 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v2"
)

// A Logger stored as v1 before v1's schema had its bounds (1 to 3600) can
// say timeInterval 0, -5 or 7200. ConvertTo writes "0s", "-5s", "7200s",
// which v2's schema would refuse, and ConvertFrom gives the same number
// back: both round trips give the object back.
func TestStoredOutOfBoundsRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		timeInterval int32
		interval     string
	}{{0, "0s"}, {-5, "-5s"}, {7200, "7200s"}} {
		old := &Logger{
			ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "ns", Generation: 1},
			Spec:       LoggerSpec{Name: "old", TimeInterval: tc.timeInterval},
		}
		var h v2.Logger
		if err := old.DeepCopy().ConvertTo(&h); err != nil {
			t.Fatalf("timeInterval %d: v1 → v2: %v", tc.timeInterval, err)
		}
		if h.Spec.Interval != tc.interval {
			t.Errorf("timeInterval %d: v2 interval %q, want %q", tc.timeInterval, h.Spec.Interval, tc.interval)
		}
		var back Logger
		if err := back.ConvertFrom(h.DeepCopy()); err != nil {
			t.Fatalf("timeInterval %d: v2 → v1: %v", tc.timeInterval, err)
		}
		if !apiequality.Semantic.DeepEqual(old, &back) {
			t.Errorf("timeInterval %d: v1 → v2 → v1 changed the Logger:\n in: %+v\nout: %+v", tc.timeInterval, old, &back)
		}
		var again v2.Logger
		if err := back.ConvertTo(&again); err != nil {
			t.Fatalf("timeInterval %d: v1 → v2: %v", tc.timeInterval, err)
		}
		if !apiequality.Semantic.DeepEqual(&h, &again) {
			t.Errorf("timeInterval %d: v2 → v1 → v2 changed the Logger:\n in: %+v\nout: %+v", tc.timeInterval, &h, &again)
		}
	}
}

// An interval outside v2's bounds that is not v1's spelling of a number
// of seconds cannot be written through either version; if one is stored
// anyway, v1 shows it clamped to 1 to 3600, with the interval itself in
// IntervalAnnotation. ConvertTo takes back only an annotation v2 admits,
// so that a v1 client cannot write through it what v2 refuses.
func TestConvertFromClamps(t *testing.T) {
	for _, tc := range []struct {
		interval     string
		timeInterval int32
	}{{"2h", 3600}, {"50ms", 1}, {"-1m", 1}, {"soon", 1}} {
		var got Logger
		if err := got.ConvertFrom(hub(tc.interval)); err != nil {
			t.Fatalf("%s: %v", tc.interval, err)
		}
		if got.Spec.TimeInterval != tc.timeInterval || got.Annotations[IntervalAnnotation] != tc.interval {
			t.Errorf("v2 interval %q: v1 timeInterval %d, annotation %q; want %d, %q",
				tc.interval, got.Spec.TimeInterval, got.Annotations[IntervalAnnotation], tc.timeInterval, tc.interval)
		}
	}
}

// controller-runtime's handler fails a whole ConversionReview on the
// first object that does not convert, and the API server's list stops at
// the first object it cannot read. So one Logger stored before the bounds
// must convert like the others.
func TestReviewWithAStoredOutOfBoundsLogger(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{AddToScheme, v2.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	var objects []runtime.RawExtension
	for _, l := range []*v2.Logger{hub("5s"), hub("0s"), hub("1500ms")} {
		l.APIVersion, l.Kind = "example.com/v2", "Logger"
		raw, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		objects = append(objects, runtime.RawExtension{Raw: raw})
	}
	review, err := json.Marshal(apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: "1", DesiredAPIVersion: "example.com/v1", Objects: objects},
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	conversion.NewWebhookHandler(scheme, conversion.NewRegistry()).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(review)))

	var resp apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || resp.Response == nil {
		t.Fatalf("answer %d %s: %v", rec.Code, rec.Body, err)
	}
	if resp.Response.Result.Status != metav1.StatusSuccess || len(resp.Response.ConvertedObjects) != 3 {
		t.Fatalf("review of 3 Loggers, one with interval 0s: status %q, %d converted, message %q; want Success and 3",
			resp.Response.Result.Status, len(resp.Response.ConvertedObjects), resp.Response.Result.Message)
	}
	var second Logger
	if err := json.Unmarshal(resp.Response.ConvertedObjects[1].Raw, &second); err != nil {
		t.Fatal(err)
	}
	if second.Spec.TimeInterval != 0 {
		t.Errorf("the Logger with interval 0s: v1 timeInterval %d, want 0", second.Spec.TimeInterval)
	}
}

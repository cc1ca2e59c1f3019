package v1

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v2 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v2"
)

// What v1 says for each v2 interval, and what it keeps in the annotation.
// A v1 client, and an admission policy written against v1, sees the
// rounded number: 4500ms is 5.
func TestConvertFromHub(t *testing.T) {
	for _, tc := range []struct {
		interval     string
		timeInterval int32
		kept         string // IntervalAnnotation; "" when there is none
	}{
		{"5s", 5, ""},
		{"90s", 90, ""},
		{"1m30s", 90, "1m30s"},
		{"1500ms", 2, "1500ms"},
		{"4500ms", 5, "4500ms"},
		{"100ms", 1, "100ms"},
		{"1h", 3600, "1h"},
		{"2 minutes", 120, "2 minutes"},
	} {
		var got Logger
		if err := got.ConvertFrom(hub(tc.interval)); err != nil {
			t.Fatalf("%s: %v", tc.interval, err)
		}
		if got.Spec.TimeInterval != tc.timeInterval || got.Annotations[IntervalAnnotation] != tc.kept {
			t.Errorf("v2 interval %q: v1 timeInterval %d, annotation %q; want %d, %q",
				tc.interval, got.Spec.TimeInterval, got.Annotations[IntervalAnnotation], tc.timeInterval, tc.kept)
		}
	}
}

// A v1 client that changes timeInterval leaves the annotation behind; its
// new value wins, and the annotation, which no longer describes the object,
// goes.
func TestV1EditWins(t *testing.T) {
	var v1 Logger
	if err := v1.ConvertFrom(hub("1500ms")); err != nil {
		t.Fatal(err)
	}
	v1.Spec.TimeInterval = 7 // kubectl edit, through v1
	var back v2.Logger
	if err := v1.ConvertTo(&back); err != nil {
		t.Fatal(err)
	}
	if back.Spec.Interval != "7s" || back.Annotations != nil {
		t.Fatalf("after a v1 edit of timeInterval to 7: v2 interval %q, annotations %v; want 7s and none", back.Spec.Interval, back.Annotations)
	}
}

// FuzzHubRoundTrip: every v2 Logger whose interval the schema admits, or
// is "<n>s" for any int32 n (what ConvertTo makes of a v1 Logger stored
// before v1's bounds), converted to v1 and back, is the same object, but
// for an IntervalAnnotation on it, which v2 has no use for: that one is
// dropped. The interval is spelled in each of the ways the API server
// accepts. Any other interval, too, converts to v1 without an error:
// timeInterval clamped to 1 to 3600, the interval in the annotation.
func FuzzHubRoundTrip(f *testing.F) {
	f.Add("heartbeat", int64(5000), uint8(0), "", int32(2), true, "team", "a", "Available", int64(3))
	f.Add("x", int64(1500), uint8(1), "", int32(0), true, "", "", "", int64(0))
	f.Add("audit", int64(90000), uint8(2), "", int32(10), false, "example.com/team", "", "Unavailable", int64(1))
	f.Add("y", int64(0), uint8(4), "2 minutes", int32(1), true, IntervalAnnotation, "stale", "", int64(7))
	f.Add("old", int64(0), uint8(2), "", int32(1), true, "", "", "", int64(1))       // "0s"
	f.Add("old", int64(-5000), uint8(2), "", int32(1), true, "", "", "", int64(1))   // "-5s"
	f.Add("old", int64(7200000), uint8(0), "", int32(1), true, "", "", "", int64(1)) // "2h0m0s"
	f.Add("bad", int64(0), uint8(4), "soon", int32(1), true, "", "", "", int64(1))
	f.Fuzz(func(t *testing.T, printed string, millis int64, spelling uint8, raw string, replicas int32, setReplicas bool, key, value, state string, generation int64) {
		interval := spell(millis, spelling, raw)
		in := hub(interval)
		in.Spec.Name = printed
		in.Spec.Replicas = nil
		if setReplicas {
			in.Spec.Replicas = &replicas
		}
		if key != "" {
			in.Annotations = map[string]string{key: value}
		}
		in.Status = v2.LoggerStatus{State: state, ObservedGeneration: generation}
		if state != "" {
			in.Status.Conditions = []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue, Reason: state, ObservedGeneration: generation}}
		}

		var spoke Logger
		if err := spoke.ConvertFrom(in.DeepCopy()); err != nil {
			t.Fatalf("v2 → v1: %v", err)
		}
		if _, err := v2.ParseInterval(interval); err != nil && !legacy(interval) {
			if ti := spoke.Spec.TimeInterval; ti < 1 || ti > 3600 || spoke.Annotations[IntervalAnnotation] != interval {
				t.Fatalf("v2 interval %q, which v2 does not admit: v1 timeInterval %d, annotation %q; want 1 to 3600, and the interval", interval, ti, spoke.Annotations[IntervalAnnotation])
			}
			return
		}
		var out v2.Logger
		if err := spoke.ConvertTo(&out); err != nil {
			t.Fatalf("v1 → v2: %v", err)
		}
		want := in.DeepCopy()
		delete(want.Annotations, IntervalAnnotation)
		if len(want.Annotations) == 0 {
			want.Annotations = nil
		}
		if !apiequality.Semantic.DeepEqual(want, &out) {
			t.Fatalf("v2 → v1 → v2 changed the Logger:\n in: %+v\nv1: %+v\nout: %+v", in, &spoke, &out)
		}
	})
}

// legacy reports whether interval is "<n>s" for an int32 n, as ConvertTo
// spells timeInterval n: no sign but minus, no leading zero.
func legacy(interval string) bool {
	n, err := strconv.ParseInt(strings.TrimSuffix(interval, "s"), 10, 32)
	return err == nil && fmt.Sprintf("%ds", n) == interval
}

// FuzzSpokeRoundTrip: every v1 Logger, whatever its timeInterval (one
// stored before v1's bounds included), converted to v2 and back, is the
// same object, but for an IntervalAnnotation that does not
// describe spec.timeInterval (written by hand, or left behind by a v1
// client's change of timeInterval): that one is dropped.
func FuzzSpokeRoundTrip(f *testing.F) {
	f.Add("heartbeat", int32(5), int32(2), true, false, "", "team", "a")
	f.Add("x", int32(2), int32(0), true, true, "1500ms", "", "")
	f.Add("y", int32(90), int32(1), false, true, "1m30s", "example.com/team", "b")
	f.Add("z", int32(7), int32(1), false, true, "1500ms", "", "")  // left behind
	f.Add("w", int32(5), int32(1), false, true, "5s", "", "")      // says what timeInterval says
	f.Add("old", int32(0), int32(1), false, true, "100ms", "", "") // stored before the bounds
	f.Add("old", int32(-5), int32(1), false, false, "", "", "")
	f.Add("old", int32(7200), int32(1), false, false, "", "", "")
	f.Fuzz(func(t *testing.T, printed string, timeInterval, replicas int32, setReplicas, annotate bool, kept, key, value string) {
		in := &Logger{
			ObjectMeta: metav1.ObjectMeta{Name: "heartbeat", Namespace: "ns", Generation: 2},
			Spec:       LoggerSpec{Name: printed, TimeInterval: timeInterval},
		}
		if setReplicas {
			in.Spec.Replicas = &replicas
		}
		if key != "" && key != IntervalAnnotation {
			in.Annotations = map[string]string{key: value}
		}
		if annotate {
			if in.Annotations == nil {
				in.Annotations = map[string]string{}
			}
			in.Annotations[IntervalAnnotation] = kept
		}

		var h v2.Logger
		if err := in.DeepCopy().ConvertTo(&h); err != nil {
			t.Fatalf("v1 → v2: %v", err)
		}
		var out Logger
		if err := out.ConvertFrom(&h); err != nil {
			t.Fatalf("v2 → v1: %v", err)
		}
		want := in.DeepCopy()
		if annotate && !describes(kept, timeInterval) {
			delete(want.Annotations, IntervalAnnotation)
		}
		if !apiequality.Semantic.DeepEqual(want, &out) {
			t.Fatalf("v1 → v2 → v1 changed the Logger:\n in: %+v\nv2: %+v\nout: %+v", in, &h, &out)
		}
	})
}

// describes reports whether an IntervalAnnotation of kept is one that
// ConvertFrom writes for timeInterval: an interval v2 admits of
// timeInterval seconds, spelled otherwise than intervalOf spells it.
func describes(kept string, timeInterval int32) bool {
	d, err := v2.ParseInterval(kept)
	return err == nil && seconds(d) == timeInterval && kept != intervalOf(timeInterval)
}

// hub is a v2 Logger with the given interval.
func hub(interval string) *v2.Logger {
	return &v2.Logger{
		ObjectMeta: metav1.ObjectMeta{Name: "heartbeat", Namespace: "ns", Generation: 2},
		Spec:       v2.LoggerSpec{Name: "heartbeat", Interval: interval},
	}
}

// spell writes millis milliseconds as a client might: Go's form ("1m30s"),
// in milliseconds ("90000ms"), in seconds when whole ("90s"), in words
// ("90 seconds"), or raw, as the fuzzer made it.
func spell(millis int64, spelling uint8, raw string) string {
	d := time.Duration(millis) * time.Millisecond
	switch spelling % 5 {
	case 0:
		return d.String()
	case 1:
		return fmt.Sprintf("%dms", millis)
	case 2:
		if millis%1000 == 0 {
			return fmt.Sprintf("%ds", millis/1000)
		}
		return fmt.Sprintf("%dms", millis)
	case 3:
		return fmt.Sprintf("%d seconds", millis/1000)
	default:
		return raw
	}
}

package v1

import (
	"math"
	"strconv"
	"strings"
	"time"

	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	v2 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v2"
)

// v1 is a spoke: it converts to and from v2, the hub, and never to another
// spoke directly. controller-runtime's conversion webhook finds these two
// methods (conversion.Convertible) and the hub's Hub() method; a third
// version would need only its own pair, with v2.
var _ conversion.Convertible = &Logger{}

// IntervalAnnotation keeps a v2 spec.interval that v1's whole seconds
// cannot hold ("1500ms", or "1m30s" where v1 would say 90), on the v1
// object, so that a v1 client's read, change and write gives it back to v2
// unchanged. Upstream API types do the same for fields an older version
// lacks. It is only on v1 objects: v2 has the field itself.
const IntervalAnnotation = "v2.example.com/interval"

// ConvertTo converts this v1 Logger into the hub, v2. spec.interval is
// IntervalAnnotation when the annotation still describes spec.timeInterval
// (and is an interval v2 admits), else timeInterval seconds: a v1 client
// that changed timeInterval left an annotation that no longer does, and its
// new value wins. An annotation v2 does not admit is never taken: v1's
// schema does not check it, and v2's would refuse it. The annotation is not
// carried to v2. It never fails: any timeInterval, even one outside v1's
// bounds, is "<n>s".
func (src *Logger) ConvertTo(dstRaw conversion.Hub) error {
	dst := dstRaw.(*v2.Logger)
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.Spec = v2.LoggerSpec{
		Name:     src.Spec.Name,
		Interval: intervalOf(src.Spec.TimeInterval),
		Replicas: copyInt32(src.Spec.Replicas),
	}
	if kept, ok := src.Annotations[IntervalAnnotation]; ok {
		if d, err := v2.ParseInterval(kept); err == nil && seconds(d) == src.Spec.TimeInterval {
			dst.Spec.Interval = kept
		}
		delete(dst.Annotations, IntervalAnnotation)
		if len(dst.Annotations) == 0 {
			dst.Annotations = nil
		}
	}
	dst.Status = v2.LoggerStatus{
		Conditions:         src.Status.DeepCopy().Conditions,
		ObservedGeneration: src.Status.ObservedGeneration,
		State:              src.Status.State,
	}
	return nil
}

// ConvertFrom converts the hub, v2, into this v1 Logger. spec.timeInterval
// is timeIntervalOf spec.interval; when intervalOf(timeInterval) does not
// give spec.interval back exactly, IntervalAnnotation keeps it. It never
// fails: one Logger that does not convert fails every list and watch that
// reads it (the API server's list stops at its first error), and
// controller-runtime's handler fails a whole ConversionReview on its first
// error.
func (dst *Logger) ConvertFrom(srcRaw conversion.Hub) error {
	src := srcRaw.(*v2.Logger)
	src.ObjectMeta.DeepCopyInto(&dst.ObjectMeta)
	dst.Spec = LoggerSpec{
		Name:         src.Spec.Name,
		TimeInterval: timeIntervalOf(src.Spec.Interval),
		Replicas:     copyInt32(src.Spec.Replicas),
	}
	delete(dst.Annotations, IntervalAnnotation)
	if src.Spec.Interval != intervalOf(dst.Spec.TimeInterval) {
		if dst.Annotations == nil {
			dst.Annotations = map[string]string{}
		}
		dst.Annotations[IntervalAnnotation] = src.Spec.Interval
	} else if len(dst.Annotations) == 0 {
		dst.Annotations = nil
	}
	dst.Status = LoggerStatus{
		Conditions:         src.Status.DeepCopy().Conditions,
		ObservedGeneration: src.Status.ObservedGeneration,
		State:              src.Status.State,
	}
	return nil
}

// timeIntervalOf is v1's timeInterval for a v2 interval. "<n>s", as
// intervalOf spells n, is n, even outside v1's bounds: ConvertTo wrote it
// for a Logger stored as v1 before the bounds, and gives n back. Any other
// interval is seconds of it, so from 1 to 3600, and 1 when it is no
// duration at all (the schema refuses it; only an object stored around the
// API server could carry one).
func timeIntervalOf(interval string) int32 {
	if n, err := strconv.ParseInt(strings.TrimSuffix(interval, "s"), 10, 32); err == nil && intervalOf(int32(n)) == interval {
		return int32(n)
	}
	d, err := strfmt.ParseDuration(interval)
	if err != nil {
		return 1
	}
	return seconds(d)
}

// intervalOf is how v2 spells v1's timeInterval: "90s", not "1m30s".
func intervalOf(timeInterval int32) string {
	return strconv.Itoa(int(timeInterval)) + "s"
}

// seconds is d in v1's terms: whole seconds, rounded, from 1 to 3600
// (v2's 100ms to 1h).
func seconds(d time.Duration) int32 {
	s := math.Round(d.Seconds())
	return int32(min(max(s, 1), 3600))
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

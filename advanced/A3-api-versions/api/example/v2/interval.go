package v2

import (
	"fmt"
	"time"
	"unicode/utf8"

	"k8s.io/kube-openapi/pkg/validation/strfmt"
)

// The bounds of spec.interval, as the markers on LoggerSpec.Interval give
// them to the API server.
const (
	MinInterval       = 100 * time.Millisecond
	MaxInterval       = time.Hour
	MaxIntervalLength = 32
)

// ParseInterval reads spec.interval as the API server does: the OpenAPI
// duration format's parser, then the schema's bounds. The API server refuses
// a Logger whose interval fails here; a conversion or the operator that meets
// one anyway says which rule it breaks.
func ParseInterval(s string) (time.Duration, error) {
	// maxLength counts characters, as the API server does, not bytes.
	if utf8.RuneCountInString(s) > MaxIntervalLength {
		return 0, fmt.Errorf("spec.interval %q is longer than %d characters", s, MaxIntervalLength)
	}
	d, err := strfmt.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("spec.interval %q is not a duration such as 5s or 1m30s", s)
	}
	if d < MinInterval || d > MaxInterval {
		return 0, fmt.Errorf("spec.interval %q is %s, outside %s to %s", s, d, MinInterval, MaxInterval)
	}
	return d, nil
}

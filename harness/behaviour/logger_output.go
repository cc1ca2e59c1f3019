package behaviour

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-flow/operator-flow/harness"
)

// activityLine is what a Logger's container prints every timeInterval
// seconds, for example "2026-11-25T01:02:03Z heartbeat-e2e is active".
var activityLine = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) (.*) is active$`)

// activityLines is how many lines the check waits for: three lines give two
// gaps to measure.
const activityLines = 3

// waitLoggerOutput checks what only a cluster that runs pods can show: a pod
// of Logger `logger` prints "<time> <printed> is active" every interval
// seconds. kwok only simulates pods, so there the step is skipped; kind runs
// them.
func (f *fixture) waitLoggerOutput(t *testing.T, logger, printed string, interval int64) {
	t.Helper()
	if os.Getenv("CLUSTER") != "kind" {
		t.Skip("kwok simulates pods and runs no container, so there is no output to read; CLUSTER=kind runs this check")
	}
	selector := "app.kubernetes.io/name=logger,app.kubernetes.io/instance=" + logger
	var times []time.Time
	// Three lines take two intervals after the pod starts; the pod itself
	// starts within converge.
	timeout := converge + time.Duration(activityLines*interval)*time.Second
	harness.Eventually(t, timeout, fmt.Sprintf("a pod of Logger %s to print %d activity lines", logger, activityLines), func(ctx context.Context) (bool, string, error) {
		pods, err := f.C.Kube.CoreV1().Pods(f.NS).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, "", err
		}
		seen := []string{}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				seen = append(seen, p.Name+" is "+string(p.Status.Phase))
				continue
			}
			raw, err := f.C.Kube.CoreV1().Pods(f.NS).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil {
				return false, "", err
			}
			times, err = activityTimes(string(raw), printed)
			if err != nil {
				return false, "", fmt.Errorf("pod %s: %w", p.Name, err)
			}
			if len(times) >= activityLines {
				t.Logf("pod %s prints:\n%s", p.Name, strings.TrimSpace(string(raw)))
				return true, "", nil
			}
			seen = append(seen, fmt.Sprintf("pod %s printed %d activity lines", p.Name, len(times)))
		}
		return false, strings.Join(seen, "; "), nil
	})
	// date prints whole seconds and the loop's own work takes a moment, so a
	// gap is the interval or one second more; a loaded node may add another.
	for i := 1; i < len(times); i++ {
		gap := times[i].Sub(times[i-1])
		if gap < time.Duration(interval)*time.Second || gap > time.Duration(interval+2)*time.Second {
			t.Errorf("activity lines %d and %d are %v apart, want the interval, %ds", i, i+1, gap, interval)
		}
	}
}

// activityTimes returns the times of the activity lines in a pod's log. A
// line that is not an activity line of the Logger `printed` is an error: the
// container prints nothing else.
func activityTimes(log, printed string) ([]time.Time, error) {
	var out []time.Time
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if line == "" {
			continue
		}
		m := activityLine.FindStringSubmatch(line)
		if m == nil || m[2] != printed {
			return nil, fmt.Errorf("unexpected log line %q, want \"<time> %s is active\"", line, printed)
		}
		at, err := time.Parse(time.RFC3339, m[1])
		if err != nil {
			return nil, err
		}
		out = append(out, at)
	}
	return out, nil
}

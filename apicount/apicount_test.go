package apicount

import (
	"strings"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		method, path, watch string
		want                Key
	}{
		{"GET", "/apis/flights.com/v1/flighttickets", "", Key{"LIST", "flighttickets"}},
		{"GET", "/apis/flights.com/v1/flighttickets", "true", Key{"WATCH", "flighttickets"}},
		{"GET", "/apis/flights.com/v1/namespaces/ns1/flighttickets", "", Key{"LIST", "flighttickets"}},
		{"GET", "/apis/flights.com/v1/namespaces/ns1/flighttickets/a", "", Key{"GET", "flighttickets"}},
		{"PUT", "/apis/flights.com/v1/namespaces/ns1/flighttickets/a/status", "", Key{"UPDATE", "flighttickets/status"}},
		{"POST", "/apis/apps/v1/namespaces/ns1/deployments", "", Key{"CREATE", "deployments"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns1/deployments/logger-a", "", Key{"PATCH", "deployments"}},
		{"DELETE", "/apis/apps/v1/namespaces/ns1/deployments/logger-a", "", Key{"DELETE", "deployments"}},
		{"GET", "/api/v1/namespaces/ns1", "", Key{"GET", "namespaces"}},
		{"GET", "/api/v1/namespaces", "", Key{"LIST", "namespaces"}},
		{"GET", "/api/v1/watch/namespaces/ns1/configmaps", "", Key{"WATCH", "configmaps"}},
		{"POST", "/api/v1/namespaces/ns1/events", "", Key{"CREATE", "events"}},
		{"GET", "/version", "", Key{"GET", "/version"}},
		{"GET", "/apis/flights.com/v1", "", Key{"GET", "(discovery)"}},
	} {
		if got := Classify(tc.method, tc.path, tc.watch); got != tc.want {
			t.Errorf("Classify(%s %s watch=%q) = %v, want %v", tc.method, tc.path, tc.watch, got, tc.want)
		}
	}
}

func TestSummaryRoundTrip(t *testing.T) {
	c := New()
	c.Add(Key{"LIST", "flighttickets"})
	c.Add(Key{"UPDATE", "flighttickets"})
	c.Add(Key{"UPDATE", "flighttickets"})
	c.Add(Key{"GET", "/version"})
	var b strings.Builder
	b.WriteString("some log line\n")
	c.WriteSummary(&b)
	got, complete := ParseSummary(b.String())
	if !complete {
		t.Fatalf("summary not recognised as complete:\n%s", b.String())
	}
	want := c.Snapshot()
	if len(got) != len(want) {
		t.Fatalf("parsed %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%v: parsed %d, want %d", k, got[k], n)
		}
	}
	if total, reads, writes := Totals(got); total != 4 || reads != 2 || writes != 2 {
		t.Errorf("totals = %d/%d/%d, want 4/2/2", total, reads, writes)
	}
}

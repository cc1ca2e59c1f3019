package e2e

import (
	"context"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/apicount"
	"github.com/operator-flow/operator-flow/harness"
)

// TestGETPerEvent: stage 02 keeps no copy of anything, so for every event it
// asks the API server for the current object (and, for Loggers, their
// Deployments): at least one GET per ADDED or MODIFIED event it handled.
func TestGETPerEvent(t *testing.T) {
	f := features.New("weakness: no cache").
		Assess("every ADDED or MODIFIED event costs at least one GET", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w := newWorld(t, cfg, "get-per-event")
			op := w.start(t)
			for _, tk := range []struct {
				name, from, to string
			}{{"amsterdam-lisbon", "Amsterdam", "Lisbon"}, {"paris-rome", "Paris", "Rome"}, {"oslo-bergen", "Oslo", "Bergen"}} {
				w.createTicket(t, tk.name, tk.from, tk.to, 2)
			}
			w.createLogger(t, "audit", 1)
			w.createLogger(t, "heartbeat", 2)
			for _, name := range []string{"amsterdam-lisbon", "paris-rome", "oslo-bergen"} {
				w.waitStatus(t, ticketsGVR, name, "phase", "Booked")
			}
			w.waitStatus(t, loggersGVR, "audit", "state", "Available")
			w.waitStatus(t, loggersGVR, "heartbeat", "state", "Available")

			if err := op.Stop(); err != nil {
				t.Fatalf("stopping the operator: %v", err)
			}
			counts, ok := apicount.ParseSummary(op.Log())
			if !ok {
				t.Fatalf("no request summary in the operator's output:\n%s", op.Log())
			}
			events := op.CountLog("event ADDED") + op.CountLog("event MODIFIED")
			gets := 0
			for k, n := range counts {
				if k.Verb == "GET" {
					gets += n
				}
			}
			t.Logf("3 tickets and 2 Loggers: %d ADDED/MODIFIED events handled, %d GETs; all requests: %v", events, gets, counts)
			if events == 0 || gets < events {
				t.Errorf("%d GETs for %d events; stage 02 has no cache, so it should send at least as many GETs as it handles events", gets, events)
			}
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

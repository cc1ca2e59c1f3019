package e2e

import (
	"context"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// TestWatchResumesWhereItStopped: the API server ends every watch after a
// while (here after 1 s, through --watch-timeout). The loop opens a new one
// from the last resourceVersion it saw, without a new LIST, and misses
// nothing. (The other path, 410 Gone and a fresh LIST, needs history the API
// server has compacted away; the unit tests drive it with a fake watch.)
func TestWatchResumesWhereItStopped(t *testing.T) {
	f := features.New("reconnect").
		Assess("after the API server ends a watch, events keep coming without a new LIST", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w := newWorld(t, cfg, "reconnect")
			op := w.start(t, "--watch-timeout", "1s")
			w.createTicket(t, "before", "Oslo", "Bergen", 1)
			w.waitStatus(t, ticketsGVR, "before", "phase", "Booked")

			op.WaitForLog(converge, "watch flighttickets: closed by the API server; resuming at resourceVersion")
			w.createTicket(t, "after", "Bergen", "Oslo", 1)
			w.waitStatus(t, ticketsGVR, "after", "phase", "Booked")

			if n := op.CountLog("LIST flighttickets"); n != 1 {
				t.Errorf("%d LISTs of flighttickets, want 1: a resumed watch needs no LIST", n)
			}
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/apicount"
	"github.com/operator-flow/operator-flow/harness"
)

// TestSIGTERMWhileAWorkerIsBusy: SIGTERM arrives while a worker waits for an
// API server that does not answer (the gate holds its write). The worker's
// request belongs to the context that SIGTERM cancels, so the worker gives
// up at once, Run shuts the queue down and returns, and the operator exits
// cleanly with its summary, well within a pod's default grace period of 30
// seconds. The ticket it was working on is still in the cluster, unbooked,
// for the next start to book.
func TestSIGTERMWhileAWorkerIsBusy(t *testing.T) {
	const grace = 5 * time.Second
	f := features.New("graceful shutdown").
		Assess(fmt.Sprintf("SIGTERM during a write that hangs ends the operator within %s", grace), func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w := newWorld(t, cfg, "sigterm")
			stuck := fmt.Sprintf("/apis/flights.com/v1/namespaces/%s/flighttickets/stuck", w.ns)
			g := newGate(t, w.c.Config, func(r *http.Request) bool {
				return r.Method == http.MethodPut && r.URL.Path == stuck
			})
			op := harness.StartOperator(t, g.kubeconfig, w.bin, "--namespace", w.ns)
			w.createTicket(t, "stuck", "Oslo", "Bergen", 1)
			harness.Eventually(t, converge, "the worker to be held on ticket stuck", func(context.Context) (bool, string, error) {
				return g.isHolding(), "no write to stuck yet", nil
			})

			signalled := time.Now()
			if err := op.Stop(); err != nil {
				t.Fatalf("the operator did not exit cleanly after SIGTERM: %v", err)
			}
			took := time.Since(signalled)
			t.Logf("exited %v after SIGTERM, with a write in flight", took.Round(time.Millisecond))
			if took > grace {
				t.Errorf("the operator took %v to exit after SIGTERM, want under %v", took, grace)
			}
			if op.CountLog("shutting down") == 0 {
				t.Error(`no "shutting down" in the log`)
			}
			if _, complete := apicount.ParseSummary(op.Log()); !complete {
				t.Error("no complete API request summary at exit")
			}
			if phase, err := w.status(ctx, ticketsGVR, "stuck", "phase"); err != nil || phase != "" {
				t.Errorf("ticket stuck has phase %q (%v); the held write must not have gone through", phase, err)
			}
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

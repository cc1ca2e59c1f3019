package behaviour

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/apicount"
	"github.com/operator-flow/operator-flow/harness"
)

// shutdownGrace is how soon after SIGTERM an operator with a write in flight
// must have exited. A pod gets 30 s by default before the kubelet kills it;
// an operator that needs more than a few has a worker that ignores its
// context.
const shutdownGrace = 5 * time.Second

// GracefulShutdown checks that SIGTERM during a slow reconcile ends the
// operator cleanly and quickly (stages 04 to 06, whose workers run under a
// context that SIGTERM cancels). A stage's e2e test calls it.
func GracefulShutdown(t *testing.T, s Stage) {
	t.Helper()
	harness.Env().Test(t, gracefulShutdown(s))
}

// gracefulShutdown: the operator's first write to the ticket "stuck" reaches
// an API server that never answers (apiProxy holds it until the client gives
// up), so a worker is busy in the middle of a reconcile when SIGTERM comes.
// The request belongs to the context SIGTERM cancels: the worker gives up at
// once, the workers finish, and the process exits 0 with its request summary.
// The held write never reached the API server, so the ticket is still
// unbooked, for the next start to book.
func gracefulShutdown(s Stage) features.Feature {
	var (
		f *fixture
		p *apiProxy
	)
	return features.New("graceful shutdown").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "sigterm")
			p = newAPIProxy(t, operatorIdentity(t, f))
			// Longer than any test: in effect, until the operator gives up.
			p.slow, p.slowBy = isTicketWrite, time.Hour
			f.Kubeconfig = p.kubeconfig
			f.start(t)
			f.Create(t, ticketGVR, newTicket("stuck", "Oslo", "Bergen", 1))
			harness.Eventually(t, converge, "a write to ticket stuck to be held", func(context.Context) (bool, string, error) {
				return p.mostInFlight() > 0, "no write to stuck yet", nil
			})
			return ctx
		}).
		Assess(fmt.Sprintf("SIGTERM during a write that hangs ends the operator within %s", shutdownGrace), func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			signalled := time.Now()
			if err := f.op.Stop(); err != nil {
				t.Fatalf("the operator did not exit cleanly after SIGTERM: %v", err)
			}
			took := time.Since(signalled)
			t.Logf("exited %v after SIGTERM, with a write in flight", took.Round(time.Millisecond))
			if took > shutdownGrace {
				t.Errorf("the operator took %v to exit after SIGTERM, want under %v", took, shutdownGrace)
			}
			if f.op.CountLog("shutting down") == 0 {
				t.Error(`no "shutting down" in the log`)
			}
			if _, complete := apicount.ParseSummary(f.op.Log()); !complete {
				t.Error("no complete API request summary at exit")
			}
			u, err := f.Get(ctx, ticketGVR, "stuck")
			if err != nil || u == nil {
				t.Fatalf("reading ticket stuck: %v (found: %v)", err, u != nil)
			}
			if phase := str(u, "status", "phase"); phase != "" {
				t.Errorf("ticket stuck has phase %q; the held write must not have gone through", phase)
			}
			return ctx
		}).Feature()
}

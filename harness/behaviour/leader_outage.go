package behaviour

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// Short leader-election timings, as in the leader-election tests of stages
// 05 and 06: renew deadline < lease duration, retry period well below both.
const (
	outageLeaseDuration = 6 * time.Second
	outageRenewDeadline = 4 * time.Second
	outageRetryPeriod   = 500 * time.Millisecond
	// How far the exit may come later than the timings allow: a loaded
	// 2-core machine, and the 100 ms with which the test polls.
	outageSlack = 2 * time.Second
)

// LeaderOutage checks what a leader does when the API server is out of
// reach (stages 05 and 06, whose --leader-elect is controller-runtime's
// leader election). An outage shorter than the renew deadline minus the
// retry period is ridden out: the Lease is renewed when the API server is
// back, and the operator goes on. One longer than the renew deadline plus
// the retry period ends the process: client-go's elector gives up leading
// once it has failed to renew for the renew deadline, and
// controller-runtime's Manager then returns "leader election lost", so that
// a leader that lost its Lease stops soon (client-go does no fencing: two
// active replicas are unlikely, not impossible). In a pod the kubelet starts
// it again; run by hand, it stays down.
func LeaderOutage(t *testing.T, s Stage) {
	t.Helper()
	harness.Env().Test(t, leaderOutage(s))
}

func leaderOutage(s Stage) features.Feature {
	var (
		f *fixture
		p *apiProxy
	)
	isLease := func(r proxiedRequest) bool { return strings.Contains(r.path, "/leases/") }
	return features.New("the leader when the API server is away").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "leader-outage")
			p = newAPIProxy(t, operatorIdentity(t, f))
			f.Kubeconfig = p.kubeconfig
			f.start(t, "--leader-elect",
				"--leader-elect-lease-duration", outageLeaseDuration.String(),
				"--leader-elect-renew-deadline", outageRenewDeadline.String(),
				"--leader-elect-retry-period", outageRetryPeriod.String())
			f.op.WaitForLog(converge, "Successfully acquired lease")
			return ctx
		}).
		Assess("an outage shorter than the renew deadline is ridden out", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			p.disconnect()
			cut := time.Now()
			harness.Eventually(t, converge, "a Lease renewal refused by the disconnected proxy", func(context.Context) (bool, string, error) {
				n := len(p.requests(func(r proxiedRequest) bool { return isLease(r) && r.start.After(cut) }))
				return n > 0, fmt.Sprintf("%d Lease requests since the cut", n), nil
			})
			p.reconnect()
			back := time.Now()
			if back.Sub(cut) >= outageRenewDeadline {
				t.Fatalf("the outage lasted %v, not less than the renew deadline %v: this step cannot show that a short one is ridden out", back.Sub(cut), outageRenewDeadline)
			}
			harness.Eventually(t, converge, "the Lease renewed after the outage", func(context.Context) (bool, string, error) {
				n := len(p.requests(func(r proxiedRequest) bool {
					return isLease(r) && r.method == http.MethodPut && r.status == http.StatusOK && r.start.After(back)
				}))
				return n > 0, "no renewal accepted yet", nil
			})
			if f.op.Exited() || f.op.CountLog("leader election lost") > 0 {
				t.Fatalf("the leader gave up after an outage of %v, shorter than the renew deadline %v:\n%s", back.Sub(cut), outageRenewDeadline, summary(f.op))
			}
			t.Logf("an outage of %v (renew deadline %v): the Lease was renewed afterwards, and the operator goes on", back.Sub(cut).Round(time.Millisecond), outageRenewDeadline)
			f.Create(t, ticketGVR, newTicket("after-short-outage", "Oslo", "Bergen", 1))
			f.waitTicketBooked(t, "after-short-outage", "Oslo", "Bergen", 1)
			return ctx
		}).
		Assess("an outage longer than the renew deadline ends the process: leader election lost", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The exit this step causes is no crash, for any wait of the
			// feature that comes after it.
			f.op.ExpectExit()
			p.disconnect()
			cut := time.Now()
			// The elector's last renewal loop gives up after the renew
			// deadline; with ReleaseOnCancel, it then tries to give the
			// Lease back, for up to another renew deadline.
			limit := outageRetryPeriod + 2*outageRenewDeadline + outageSlack
			harness.Eventually(t, limit, "the operator to exit", func(context.Context) (bool, string, error) {
				return f.op.Exited(), "still running", nil
			})
			took := time.Since(cut)
			t.Logf("the leader exited %v after the API server went out of reach (renew deadline %v)", took.Round(time.Millisecond), outageRenewDeadline)
			if took < outageRenewDeadline-outageRetryPeriod {
				t.Errorf("the leader exited %v after the cut, before the renew deadline %v ran out", took, outageRenewDeadline)
			}
			if err := f.op.Stop(); err == nil {
				t.Errorf("the operator exited with status 0; losing the Lease is a failure, and must say so")
			}
			if f.op.CountLog("leader election lost") == 0 {
				t.Errorf("the log does not say \"leader election lost\":\n%s", summary(f.op))
			}
			return ctx
		}).Feature()
}

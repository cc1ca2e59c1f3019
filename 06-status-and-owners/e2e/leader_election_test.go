package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// Short leader-election timings, so that a takeover happens within seconds.
// The defaults (15 s, 10 s, 2 s) suit a real cluster; the proportions are
// kept: renew deadline < lease duration, retry period well below both.
const (
	leaseDuration = 6 * time.Second
	renewDeadline = 4 * time.Second
	retryPeriod   = 500 * time.Millisecond
	// client-go waits between retryPeriod and retryPeriod*(1+1.2) between two
	// attempts (JitterFactor 1.2), so a standby notices an expired lease at
	// most this long after it expired.
	retryJitter = retryPeriod * 22 / 10
	// How far a takeover may exceed what the timings allow: a loaded
	// 2-core machine, and the 100 ms with which the test polls the log.
	slack = 2 * time.Second
)

// client-go's leader election logs these when a replica starts competing
// and when it has won.
const (
	logCompeting = "Attempting to acquire leader lease"
	logLeading   = "Successfully acquired lease"
)

var ticketGVR = harness.TicketGVR

// TestLeaderElection runs two replicas with --leader-elect. Only the one
// holding the Lease reconciles; when it is killed without warning (SIGKILL:
// no chance to give the Lease back), the standby takes over once the lease
// expires, and books everything that arrived in between. A replica stopped
// cleanly (SIGTERM) gives the Lease back, so its standby takes over at once.
func TestLeaderElection(t *testing.T) {
	var (
		c           *harness.Clients
		ns          string
		start       func(t *testing.T, extra ...string) *harness.Operator
		leader, std *harness.Operator
		stdProbes   string
	)
	f := features.New("leader election").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var err error
			if c, err = harness.NewClients(cfg.Client().RESTConfig()); err != nil {
				t.Fatal(err)
			}
			ns = c.Namespace(t, "leader")
			bin := harness.BuildOperator(t, harness.OperatorPackage(stage.Package))
			behaviour.ReleaseTicketsAtCleanup(t, c, ns, cfg.KubeconfigFile(), bin, stage.Args...)
			start = func(t *testing.T, extra ...string) *harness.Operator {
				return harness.StartOperator(t, cfg.KubeconfigFile(), bin, append(append([]string{
					"--namespace", ns, "--leader-elect",
					"--leader-elect-lease-duration", leaseDuration.String(),
					"--leader-elect-renew-deadline", renewDeadline.String(),
					"--leader-elect-retry-period", retryPeriod.String(),
				}, stage.Args...), extra...)...)
			}
			// Started here, with the feature's t, the two replicas live
			// through every step below (an operator stops when the t that
			// started it ends). The first one leads, the second waits.
			leader = start(t)
			leader.WaitForLog(converge, logLeading)
			stdProbes = freeAddr(t)
			std = start(t, "--health-probe-bind-address", stdProbes) // the last flag wins
			std.WaitForLog(converge, logCompeting)
			return ctx
		}).
		Assess("the standby is ready, so a two-replica Deployment rolls out", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			harness.Eventually(t, converge, "the standby's /readyz", func(ctx context.Context) (bool, string, error) {
				code, body := get(ctx, "http://"+stdProbes+"/readyz")
				return code == http.StatusOK, fmt.Sprintf("%d %s", code, body), nil
			})
			return ctx
		}).
		Assess("only the leader reconciles", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for i := range 3 {
				createTicket(t, c, ns, fmt.Sprintf("before-%d", i))
			}
			for i := range 3 {
				waitBooked(t, c, ns, fmt.Sprintf("before-%d", i))
				leader.WaitForLog(converge, "booked", fmt.Sprintf("%q", fmt.Sprintf("before-%d", i)))
			}
			// The standby has started no controller at all: no workers, no
			// reconcile, no write.
			for _, s := range []string{"Starting workers", "booked", "in sync"} {
				if n := std.CountLog(s); n != 0 {
					t.Errorf("the standby logged %q %d times; only the leader may reconcile", s, n)
				}
			}
			if std.CountLog(logLeading) != 0 {
				t.Errorf("both replicas say they lead")
			}
			return ctx
		}).
		Assess("after SIGKILL of the leader the standby takes over once the lease expires, and misses nothing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			leader.Kill()
			killed := time.Now()
			// Created while nobody leads: the new leader must book them.
			for i := range 3 {
				createTicket(t, c, ns, fmt.Sprintf("between-%d", i))
			}
			std.WaitForLog(leaseDuration+retryJitter+slack, logLeading)
			took := time.Since(killed)
			t.Logf("standby took over %v after the leader was killed (lease duration %v, retry period %v)", took.Round(10*time.Millisecond), leaseDuration, retryPeriod)
			if took > leaseDuration+retryJitter+slack {
				t.Errorf("takeover took %v, want at most lease duration + retry period (+ jitter and slack) = %v", took, leaseDuration+retryJitter+slack)
			}
			for i := range 3 {
				waitBooked(t, c, ns, fmt.Sprintf("before-%d", i))
				waitBooked(t, c, ns, fmt.Sprintf("between-%d", i))
				std.WaitForLog(converge, "booked", fmt.Sprintf("%q", fmt.Sprintf("between-%d", i)))
			}
			return ctx
		}).
		Assess("after SIGTERM the lease is given back and a new standby takes over at once", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			next := start(t)
			next.WaitForLog(converge, logCompeting)
			// Watched from before the stop, so that the release is seen
			// even if the standby takes the Lease a moment later.
			released := harness.WatchLeaseRelease(t, c, ns)
			if err := std.Stop(); err != nil {
				t.Fatalf("the leader did not stop cleanly: %v", err)
			}
			stopped := time.Now()
			released(leaseDuration)
			// A released Lease is taken at the standby's next attempt; an
			// unreleased one only after it expires (lease duration).
			next.WaitForLog(leaseDuration+retryJitter+slack, logLeading)
			took := time.Since(stopped)
			t.Logf("after a clean stop the standby took over in %v (retry period %v, lease duration %v)", took.Round(10*time.Millisecond), retryPeriod, leaseDuration)
			if took > retryJitter+slack {
				t.Errorf("takeover after SIGTERM took %v, want at most the retry period (+ jitter and slack) = %v", took, retryJitter+slack)
			}
			createTicket(t, c, ns, "after")
			waitBooked(t, c, ns, "after")
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// converge bounds every wait for the operator to act.
const converge = 60 * time.Second

func createTicket(t *testing.T, c *harness.Clients, ns, name string) {
	t.Helper()
	u := harness.NewTicket(name, "Oslo", "Bergen", 1)
	if _, err := c.Dynamic.Resource(ticketGVR).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ticket %s: %v", name, err)
	}
}

func waitBooked(t *testing.T, c *harness.Clients, ns, name string) {
	t.Helper()
	harness.Eventually(t, converge, "ticket "+name+" booked", func(ctx context.Context) (bool, string, error) {
		u, err := c.Dynamic.Resource(ticketGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		msg, _, _ := unstructured.NestedString(u.Object, "status", "message")
		return strings.HasPrefix(msg, "Booked 1 seat(s) from Oslo to Bergen"), "message=" + msg, nil
	})
}

// TestLeaderLostWhenAPIServerAway: the leader, cut off from the API server by
// a proxy, rides out an outage shorter than the renew deadline minus the
// retry period, and exits with "leader election lost" after one longer than
// the renew deadline plus the retry period (behaviour.LeaderOutage).
func TestLeaderLostWhenAPIServerAway(t *testing.T) { behaviour.LeaderOutage(t, stage) }

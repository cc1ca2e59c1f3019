package behaviour

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// WatchExpiry checks that the operator recovers when the resourceVersion it
// would resume its watches from has expired (410 Gone, "too old resource
// version"). Stage 02 handles that by hand (stream.go); stages 03 and later
// leave it to client-go's reflector. It restarts kube-apiserver, so the
// calling package must use harness.MainPrivate.
func WatchExpiry(t *testing.T, s Stage) {
	t.Helper()
	harness.Env().Test(t, watchExpired(s))
}

// watchExpired: the operator is cut off from the API server (a proxy between
// them drops its connections). Meanwhile a ticket is created, which moves the
// resourceVersion on, and kube-apiserver restarts. A restarted API server
// fills its watch cache from etcd at the current resourceVersion, so it
// cannot replay anything older: when the operator comes back and asks to
// resume its watch from where it stopped, the answer is 410 Gone. The
// operator must LIST again, and so find the ticket it never got an event for.
//
// A Logger deleted while the operator is away is missing from that LIST. An
// informer (Stage.CachedReads, 03 on) compares the LIST with its cache and
// hands the missing object to the delete handler as a tombstone
// (cache.DeletedFinalStateUnknown), so the Deployment goes too (in 06 the
// garbage collector deletes it anyway). Stage 02 keeps no copy to compare
// with: the Deployment stays, an orphan, and the check asserts that.
func watchExpired(s Stage) features.Feature {
	const deleted = "deleted-while-away"
	var (
		f           *fixture
		p           *apiProxy
		reconnected time.Time
		orphan      *appsv1.Deployment
	)
	// A watch that asked to resume from a resourceVersion and was told that
	// version is too old.
	expiredWatch := func(r proxiedRequest) bool {
		rv := r.query.Get("resourceVersion")
		return r.method == http.MethodGet && r.query.Get("watch") == "true" && rv != "" && rv != "0" && r.gone
	}
	return features.New("watches resumed from an expired resourceVersion start over").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "expiry")
			p = newAPIProxy(t, operatorIdentity(t, f))
			f.Kubeconfig = p.kubeconfig
			f.start(t)
			f.Create(t, ticketGVR, newTicket("before", "Oslo", "Bergen", 1))
			f.Create(t, loggerGVR, newLogger(deleted, deleted, 5, 1))
			f.waitTicketBooked(t, "before", "Oslo", "Bergen", 1)
			orphan = f.waitDeployment(t, deploymentName(deleted), exists)
			return ctx
		}).
		Assess("410 Gone is answered, and the ticket created while away is booked", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			p.disconnect()
			// The test's own client does not go through the proxy.
			f.Create(t, ticketGVR, newTicket("while-away", "Oslo", "Bergen", 2))
			f.Delete(t, loggerGVR, deleted)
			harness.RestartComponent(t, "kube-apiserver", nil)
			f.waitAPIServerReady(t, "kube-apiserver")
			p.reconnect()
			reconnected = time.Now()
			harness.Eventually(t, converge, "a watch refused with 410 Gone", func(context.Context) (bool, string, error) {
				n := len(p.requests(expiredWatch))
				return n > 0, fmt.Sprintf("%d so far", n), nil
			})
			f.waitTicketBooked(t, "while-away", "Oslo", "Bergen", 2)
			return ctx
		}).
		Assess("objects created afterwards converge, with no restart of the operator", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// Each watch comes back on its own schedule: after failed
			// attempts client-go's reflector waits up to 30 s, and jitter
			// can double that. Only once every kind the operator watched
			// before is watched again does, say, a Deployment turning
			// Available reach it.
			watch := func(r proxiedRequest) bool { return r.query.Get("watch") == "true" }
			watched := map[string]bool{}
			for _, r := range p.requests(watch) {
				if r.start.Before(reconnected) {
					watched[path.Base(r.path)] = true
				}
			}
			for resource := range watched {
				harness.Eventually(t, 2*converge, "the operator to watch "+resource+" again", func(context.Context) (bool, string, error) {
					n := len(p.requests(func(r proxiedRequest) bool {
						return watch(r) && r.status == http.StatusOK && path.Base(r.path) == resource && r.start.After(reconnected)
					}))
					return n > 0, "no watch answered 200 since the reconnect", nil
				})
			}
			f.Create(t, ticketGVR, newTicket("after", "Oslo", "Bergen", 3))
			f.Create(t, loggerGVR, newLogger("after", "after-expiry", 5, 1))
			f.waitTicketBooked(t, "after", "Oslo", "Bergen", 3)
			f.waitAvailableAfterRestart(t, "after")
			f.waitLoggerState(t, "after", stateAvailable)
			if f.op.Exited() {
				t.Errorf("the operator exited; it must recover by itself:\n%s", summary(f.op))
			}
			t.Logf("watches refused with 410 Gone: %d", len(p.requests(expiredWatch)))
			return ctx
		}).
		Assess("the Deployment of the Logger deleted while away: deleted from 03 on, an orphan in 02", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			name := deploymentName(deleted)
			if s.CachedReads {
				f.waitDeploymentGone(t, name)
				return ctx
			}
			// Stage 02 deletes a Deployment only on its Logger's DELETED
			// event. Its Logger watch has come back with a LIST (it handled
			// the Logger "after" above), and no DELETED event can follow.
			d, err := f.Deployment(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if d == nil || d.UID != orphan.UID {
				t.Fatalf("%s was deleted or replaced (%v); stage 02 cannot know of a delete its LIST does not show", name, d)
			}
			return ctx
		}).Feature()
}

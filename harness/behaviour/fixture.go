package behaviour

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-flow/operator-flow/harness"
)

// converge bounds every wait for the operator. kwok makes pods Ready within a
// second; the rest is headroom for a busy 2-core machine. E2E_CONVERGE (a Go
// duration) overrides it: labs/e2e shortens it for the runs that must fail,
// so that each failing wait costs seconds instead of a minute.
var converge = convergeTimeout()

func convergeTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("E2E_CONVERGE")); err == nil && d > 0 {
		return d
	}
	return 60 * time.Second
}

// fixture is one feature's world: a namespace of its own and the operator
// watching only that namespace. Each feature builds one in its Setup step,
// so every feature starts from nothing and the harness stops its operator
// and deletes its namespace when the feature ends.
type fixture struct {
	*harness.World
	stage   Stage
	op      *harness.Operator
	started time.Time // when op was started
}

// newFixture creates the namespace and builds the stage's operator; start
// runs it.
func newFixture(t *testing.T, cfg *envconf.Config, s Stage, prefix string) *fixture {
	t.Helper()
	f := &fixture{World: harness.NewWorld(t, cfg, prefix, harness.OperatorPackage(s.Package)), stage: s}
	if s.TicketFinalizer {
		// Registered after the namespace, so it runs before the namespace
		// is deleted, and after every operator of the feature has stopped.
		ReleaseTicketsAtCleanup(t, f.C, f.NS, cfg.KubeconfigFile(), f.Bin, s.Args...)
	}
	return f
}

// start runs an operator process on the fixture's namespace and remembers it
// as f.op. extra flags come after the stage's own.
func (f *fixture) start(t *testing.T, extra ...string) *harness.Operator {
	t.Helper()
	args := append([]string{"--namespace", f.NS}, f.stage.Args...)
	var op *harness.Operator
	if f.stage.NothingForbidden {
		// Registered first, so it runs after the operator has stopped, and
		// sees its whole log.
		t.Cleanup(func() {
			if n := op.CountLog("forbidden"); n != 0 {
				t.Errorf("the operator logged \"forbidden\" %d times; its roles miss a rule the code needs:\n%s", n, op.Log())
			}
		})
	}
	f.started = time.Now()
	op = harness.StartOperator(t, f.Kubeconfig, f.Bin, append(args, extra...)...)
	f.op = op
	return op
}

// restartInSync stops the fixture's operator and starts a fresh one, and
// returns once the new one has logged "in sync" (docs/behaviour.md) for each
// of the named objects. From then on the operator has nothing of its own in
// flight: the old process's writes, which would come back to it as events,
// ended with that process, and the new one found nothing to write. So
// whatever it does next was prompted by the test, not by its own echo.
//
// The old process may have been stopped with a write still to do (a Logger's
// conditions keep moving for a moment after it turns Available, as the
// Deployment's own status settles). The fresh one then makes that write
// instead of logging "in sync", and its status echo may or may not prompt
// another look. Any write shows as a new resourceVersion on one of the
// fixture's Loggers or FlightTickets, nothing else writes them, so then this
// stops the fresh operator too and starts another, until one finds all in
// sync.
func (f *fixture) restartInSync(t *testing.T, names ...string) *harness.Operator {
	t.Helper()
	const attempts = 3
	for attempt := 1; ; attempt++ {
		if f.op != nil {
			if err := f.op.Stop(); err != nil {
				t.Fatalf("the operator did not exit cleanly after SIGTERM: %v", err)
			}
		}
		before := f.versions(t)
		op := f.start(t)
		wrote := false
		harness.Eventually(t, converge, fmt.Sprintf("a fresh operator to log \"in sync\" for %v, or to write", names), func(ctx context.Context) (bool, string, error) {
			if op.Exited() {
				return false, "", fmt.Errorf("the operator exited:\n%s", summary(op))
			}
			// A write counts even when "in sync" follows it (its echo
			// prompted another look): that operator was not idle.
			if now := f.versions(t); !maps.Equal(now, before) {
				wrote = true
				return true, "", nil
			}
			missing := []string{}
			for _, name := range names {
				if op.CountLog("in sync", f.NS+"/"+name) == 0 {
					missing = append(missing, name)
				}
			}
			return len(missing) == 0, fmt.Sprintf("no \"in sync\" yet for %v", missing), nil
		})
		if !wrote {
			return op
		}
		if attempt == attempts {
			t.Fatalf("%d fresh operators in a row each wrote to objects the previous one had converged; the last one's output:\n%s", attempts, summary(op))
		}
		t.Logf("the fresh operator finished a write its predecessor left undone; restarting it once more")
	}
}

// versions maps each Logger and FlightTicket in the fixture's namespace to its
// resourceVersion.
func (f *fixture) versions(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, gvr := range []schema.GroupVersionResource{loggerGVR, ticketGVR} {
		list, err := f.C.Dynamic.Resource(gvr).Namespace(f.NS).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing %s in %s: %v", gvr.Resource, f.NS, err)
		}
		for _, u := range list.Items {
			out[gvr.Resource+"/"+u.GetName()] = u.GetResourceVersion()
		}
	}
	return out
}

// patchSpec merges fields into an object's spec, as a user's `kubectl patch`
// would.
func (f *fixture) patchSpec(t *testing.T, gvr schema.GroupVersionResource, name string, spec map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"spec": spec})
	if _, err := f.C.Dynamic.Resource(gvr).Namespace(f.NS).Patch(context.Background(), name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching %s %s/%s: %v", gvr.Resource, f.NS, name, err)
	}
}

// waitTicketBooked waits until a ticket's status is exactly the booking of
// docs/behaviour.md for these spec values.
func (f *fixture) waitTicketBooked(t *testing.T, name, from, to string, number int64) {
	t.Helper()
	want := bookingMessage(from, to, number)
	harness.Eventually(t, converge, fmt.Sprintf("ticket %s to say %q", name, want), func(ctx context.Context) (bool, string, error) {
		u, err := f.Get(ctx, ticketGVR, name)
		if err != nil || u == nil {
			return false, "no ticket", err
		}
		phase, msg := str(u, "status", "phase"), str(u, "status", "message")
		return phase == phaseBooked && msg == want, fmt.Sprintf("phase=%q message=%q", phase, msg), nil
	})
}

// waitLoggerState waits until a Logger's status.state is want.
func (f *fixture) waitLoggerState(t *testing.T, name, want string) {
	t.Helper()
	harness.Eventually(t, converge, fmt.Sprintf("Logger %s to be %s", name, want), func(ctx context.Context) (bool, string, error) {
		u, err := f.Get(ctx, loggerGVR, name)
		if err != nil || u == nil {
			return false, "no Logger", err
		}
		state := str(u, "status", "state")
		return state == want, "state=" + state, nil
	})
}

// waitDeployment waits until the Deployment exists and ok accepts it, and
// returns it. ok explains what it saw, for the failure message.
func (f *fixture) waitDeployment(t *testing.T, name string, ok func(*appsv1.Deployment) (bool, string)) *appsv1.Deployment {
	t.Helper()
	var got *appsv1.Deployment
	harness.Eventually(t, converge, "Deployment "+name, func(ctx context.Context) (bool, string, error) {
		d, err := f.Deployment(ctx, name)
		if err != nil || d == nil {
			return false, "no Deployment", err
		}
		got = d
		good, seen := ok(d)
		return good, seen, nil
	})
	return got
}

// waitDeploymentGone waits until the Deployment no longer exists.
func (f *fixture) waitDeploymentGone(t *testing.T, name string) {
	t.Helper()
	harness.Eventually(t, converge, "Deployment "+name+" to be deleted", func(ctx context.Context) (bool, string, error) {
		d, err := f.Deployment(ctx, name)
		if err != nil {
			return false, "", err
		}
		if d == nil {
			return true, "gone", nil
		}
		return false, fmt.Sprintf("still there (deletionTimestamp=%v)", d.DeletionTimestamp), nil
	})
}

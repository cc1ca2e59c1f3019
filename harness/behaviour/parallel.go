package behaviour

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

const (
	// parallelTickets is how many FlightTickets the parallelism check
	// creates at once.
	parallelTickets = 200
	// ticketWriteLatency is added to every write of a ticket on its way to
	// the API server. It stands for a slow network or a busy API server, and
	// it makes overlapping writes certain to be seen when there are any.
	ticketWriteLatency = 50 * time.Millisecond
)

// Parallel checks that 200 FlightTickets created at once are all booked, and
// that the operator worked on several of them at the same time (stages 04
// to 06, whose workers run side by side). A stage's e2e test can call it on
// its own; Run calls it for stages that have workers.
func Parallel(t *testing.T, s Stage) {
	t.Helper()
	harness.Env().Test(t, parallelFeature(s))
}

// parallelFeature: the proof of concurrency must be impossible to fake by
// luck. The operator's writes to tickets pass through apiProxy, which holds
// each one for ticketWriteLatency and counts how many are held at the same
// moment. An operator that handles one ticket at a time sends its next write
// only after the previous one was answered, so it never has two in flight;
// two or more in flight at once can only come from concurrent workers.
func parallelFeature(s Stage) features.Feature {
	var (
		f       *fixture
		p       *apiProxy
		created time.Time
		tickets = make([]ticket, parallelTickets)
	)
	for i := range tickets {
		tickets[i] = ticket{name: fmt.Sprintf("t-%03d", i), from: "City" + fmt.Sprint(i), to: "Town" + fmt.Sprint(i), number: int64(i%10 + 1)}
	}
	return features.New("many tickets are booked by concurrent workers").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "parallel")
			p = newAPIProxy(t, operatorIdentity(t, f))
			p.slow, p.slowBy = isTicketWrite, ticketWriteLatency
			f.Kubeconfig = p.kubeconfig
			f.start(t)
			return ctx
		}).
		Assess(fmt.Sprintf("%d tickets created at once are all booked", parallelTickets), func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			objs := make([]object, len(tickets))
			for i, tk := range tickets {
				objs[i] = object{ticketGVR, tk.object()}
			}
			createAll(t, f, objs)
			created = time.Now()
			harness.Eventually(t, 3*converge, fmt.Sprintf("all %d tickets booked", parallelTickets), func(ctx context.Context) (bool, string, error) {
				list, err := f.C.Dynamic.Resource(ticketGVR).Namespace(f.NS).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, "", err
				}
				booked := 0
				for _, u := range list.Items {
					number, _, _ := unstructured.NestedInt64(u.Object, "spec", "number")
					if str(&u, "status", "phase") == phaseBooked &&
						str(&u, "status", "message") == bookingMessage(str(&u, "spec", "from"), str(&u, "spec", "to"), number) {
						booked++
					}
				}
				return booked == parallelTickets, fmt.Sprintf("%d of %d booked", booked, parallelTickets), nil
			})
			t.Logf("%d tickets booked %v after they were created (each ticket write delayed by %v)", parallelTickets, time.Since(created).Round(time.Millisecond), ticketWriteLatency)
			return ctx
		}).
		Assess("the operator had several ticket writes in flight at once", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			most := p.mostInFlight()
			t.Logf("at most %d ticket writes were in flight at the same moment", most)
			if most < 2 {
				t.Errorf("never more than %d ticket write in flight: the operator worked on one ticket at a time", most)
			}
			return ctx
		}).
		Feature()
}

// isTicketWrite matches a request that changes a FlightTicket (PUT or PATCH
// of the object or of its /status), whichever way a stage writes.
func isTicketWrite(r *http.Request) bool {
	return (r.Method == http.MethodPut || r.Method == http.MethodPatch) && strings.Contains(r.URL.Path, "/flighttickets/")
}

// createAll creates objects from several goroutines, so that they arrive
// together, as `kubectl apply -f` of a big folder would make them. The
// errors come back to the test's goroutine: t.Fatal must not be called off
// it.
func createAll(t *testing.T, f *fixture, objs []object) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(objs))
	work := make(chan object)
	for range 10 {
		wg.Go(func() {
			for o := range work {
				if err := f.TryCreate(o.gvr, o.u); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, o := range objs {
		work <- o
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// object is an object to create and its resource.
type object struct {
	gvr schema.GroupVersionResource
	u   *unstructured.Unstructured
}

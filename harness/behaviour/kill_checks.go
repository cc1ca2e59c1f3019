package behaviour

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-flow/operator-flow/harness"
)

// succeededWrite matches the writes the API server accepted that were sent
// after since.
func succeededWrite(since time.Time) func(proxiedRequest) bool {
	return func(r proxiedRequest) bool {
		return isWrite(r.method) && r.status >= 200 && r.status < 300 && !r.start.Before(since)
	}
}

// seatHoldComponent is the value of a seat hold's app.kubernetes.io/component label.
const seatHoldComponent = "seat-hold"

// seatHolds lists stage 06's seat holds: ConfigMaps in the ledger namespace,
// which is the operator's --namespace unless --ledger-namespace says other.
func (f *fixture) seatHolds(ctx context.Context) ([]corev1.ConfigMap, error) {
	list, err := f.C.Kube.CoreV1().ConfigMaps(f.NS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=" + seatHoldComponent})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// checkSeatHolds: after the kills, there are want tickets, every one carries
// the finalizer and exactly one seat hold with its seats, and no hold
// belongs to no ticket. A hold is named after its ticket, so a second create
// of the same booking is refused as AlreadyExists instead of adding one; what this
// catches is a lost hold, wrong seats, or a hold left behind. It waits for
// that, as long as the operator needs to see to holds a dead process's
// late write created or deleted.
func (f *fixture) checkSeatHolds(t *testing.T, want int) {
	t.Helper()
	var tickets, holds int
	harness.Eventually(t, converge, "every ticket with its finalizer and one seat hold with its seats, and no other hold", func(ctx context.Context) (bool, string, error) {
		problems, err := f.seatHoldProblems(ctx, want, &tickets, &holds)
		return len(problems) == 0, strings.Join(problems, "; "), err
	})
	t.Logf("%d tickets, %d seat holds, each ticket with its finalizer and one hold", tickets, holds)
}

// seatHoldProblems says what checkSeatHolds finds wrong, and counts the
// tickets and the holds.
func (f *fixture) seatHoldProblems(ctx context.Context, want int, tickets, holds *int) ([]string, error) {
	list, err := f.C.Dynamic.Resource(ticketGVR).Namespace(f.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	hs, err := f.seatHolds(ctx)
	if err != nil {
		return nil, err
	}
	*tickets, *holds = len(list.Items), len(hs)
	var problems []string
	if len(list.Items) != want {
		problems = append(problems, fmt.Sprintf("%d tickets, want %d", len(list.Items), want))
	}
	perTicket := map[string][]corev1.ConfigMap{}
	for _, h := range hs {
		perTicket[h.Data["ticket"]] = append(perTicket[h.Data["ticket"]], h)
	}
	for _, u := range list.Items {
		key := f.NS + "/" + u.GetName()
		n, _, _ := unstructured.NestedInt64(u.Object, "spec", "number")
		if !slices.Contains(u.GetFinalizers(), ticketFinalizer) {
			problems = append(problems, fmt.Sprintf("ticket %s has finalizers %v, want %s", key, u.GetFinalizers(), ticketFinalizer))
		}
		switch hs := perTicket[key]; {
		case len(hs) != 1:
			problems = append(problems, fmt.Sprintf("ticket %s has %d seat holds, want exactly 1", key, len(hs)))
		case hs[0].Data["seats"] != strconv.FormatInt(n, 10):
			problems = append(problems, fmt.Sprintf("the seat hold %s of ticket %s holds %q seats, want %d", hs[0].Name, key, hs[0].Data["seats"], n))
		}
		delete(perTicket, key)
	}
	for key, hs := range perTicket {
		problems = append(problems, fmt.Sprintf("%d seat holds for %s, which is no ticket", len(hs), key))
	}
	slices.Sort(problems)
	return problems, nil
}

// checkBookedEvents: a ticket's spec never changes here (generation 1), so
// it is booked once, and records at most one Booked Event. At most, not
// exactly: the operator records the Event after it writes the status, and
// the Event goes out from a buffer in the background, so a SIGKILL between
// the two loses it, and the next process finds the ticket booked and records
// nothing. A second Booked Event for the same ticket means a second booking.
// Every ticket the last process booked (it logged "booked") must have its
// Event: that process is still running, and nothing stops it sending it.
// A ticket is told apart by its UID: one deleted and created again under the
// same name is another ticket, and the Events of the deleted one stay.
func (f *fixture) checkBookedEvents(t *testing.T) {
	t.Helper()
	var booked map[types.UID]int32
	var tickets []unstructured.Unstructured
	lastBooked := 0
	harness.Eventually(t, converge, "a Booked Event for every ticket the running operator booked", func(ctx context.Context) (bool, string, error) {
		list, err := f.C.Dynamic.Resource(ticketGVR).Namespace(f.NS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		tickets = list.Items
		events, err := f.C.Kube.EventsV1().Events(f.NS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		booked = map[types.UID]int32{}
		for _, e := range events.Items {
			if e.Reason == phaseBooked && e.Regarding.Kind == "FlightTicket" {
				// A repeat within one process is sent as a series on
				// the first Event: the second occurrence sets its
				// count to 2 at once (later counts go out only with
				// client-go's 30-minute refresh, or as the series'
				// final count 6 to 12 minutes after its last repeat),
				// so a count of 2 or more means at least one repeat.
				booked[e.Regarding.UID] += max(1, seriesCount(&e))
			}
		}
		missing := []string{}
		lastBooked = 0
		for _, u := range tickets {
			if f.op.CountLog("booked", fmt.Sprintf("%q", u.GetName())) > 0 {
				lastBooked++
				if booked[u.GetUID()] == 0 {
					missing = append(missing, u.GetName())
				}
			}
		}
		return len(missing) == 0, fmt.Sprintf("no Booked Event for %v", missing), nil
	})
	total := 0
	for _, u := range tickets {
		n := booked[u.GetUID()]
		total += int(n)
		if n > 1 {
			t.Errorf("ticket %s was booked %d times (Booked Events), want at most once", u.GetName(), n)
		}
	}
	t.Logf("%d Booked Events for %d tickets; the last operator booked %d, the other %d were booked by killed processes, which may lose an Event", total, len(tickets), lastBooked, len(tickets)-lastBooked)
}

func seriesCount(e *eventsv1.Event) int32 {
	if e.Series == nil {
		return 0
	}
	return e.Series.Count
}

// progress counts tickets booked with the message their spec asks for, plus
// Loggers whose Deployment exists with the replicas and interval they ask for.
func (f *fixture) progress(ctx context.Context) (int, error) {
	done := 0
	tickets, err := f.C.Dynamic.Resource(ticketGVR).Namespace(f.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	for _, u := range tickets.Items {
		n, _, _ := unstructured.NestedInt64(u.Object, "spec", "number")
		if str(&u, "status", "phase") == phaseBooked && str(&u, "status", "message") == bookingMessage("Oslo", "Bergen", n) {
			done++
		}
	}
	deps, err := f.C.Kube.AppsV1().Deployments(f.NS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=logger"})
	if err != nil {
		return 0, err
	}
	for i := range deps.Items {
		want := wantDeployment{logger: deps.Items[i].Labels["app.kubernetes.io/instance"], printed: "batch", interval: 5, replicas: 1, image: defaultImage}
		if len(want.problems(&deps.Items[i])) == 0 {
			done++
		}
	}
	return done, nil
}

func (f *fixture) countLoggers(ctx context.Context, state string) (int, error) {
	loggers, err := f.C.Dynamic.Resource(loggerGVR).Namespace(f.NS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range loggers.Items {
		if str(&loggers.Items[i], "status", "state") == state {
			n++
		}
	}
	return n, nil
}

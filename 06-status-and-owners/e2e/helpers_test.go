package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// world is one test's namespace, clients and operator binary
// (harness.World), and the args this stage's operator runs with, after the
// stage's own.
type world struct {
	*harness.World
	args []string
}

// newWorld creates the namespace, builds the operator, and makes sure the
// tickets left in the namespace are released (their finalizer run) before
// the namespace is deleted.
func newWorld(t *testing.T, cfg *envconf.Config, prefix string, args ...string) *world {
	t.Helper()
	w := &world{World: harness.NewWorld(t, cfg, prefix, harness.OperatorPackage(stage.Package))}
	w.args = append(append([]string{}, stage.Args...), args...)
	behaviour.ReleaseTicketsAtCleanup(t, w.C, w.NS, w.Kubeconfig, w.Bin, w.args...)
	return w
}

// start runs the operator on the world's namespace; the harness stops it
// when t ends.
func (w *world) start(t *testing.T) *harness.Operator {
	t.Helper()
	return w.Start(t, w.args...)
}

func newTicketObject(name, from, to string, number int64) *unstructured.Unstructured {
	return harness.NewTicket(name, from, to, number)
}

// newLoggerObject is a Logger that prints its own name every 5 seconds.
func newLoggerObject(name string, replicas int64) *unstructured.Unstructured {
	return harness.NewLogger(name, name, 5, replicas)
}

// condition is one entry of status.conditions, read from an unstructured
// object.
type condition struct {
	Status, Reason, Message string
	ObservedGeneration      int64
}

func (c condition) String() string {
	return fmt.Sprintf("%s/%s (observedGeneration %d): %q", c.Status, c.Reason, c.ObservedGeneration, c.Message)
}

// conditionOf returns the condition of type typ, and whether there is one.
func conditionOf(u *unstructured.Unstructured, typ string) (condition, bool) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, x := range conds {
		m, _ := x.(map[string]any)
		if m["type"] != typ {
			continue
		}
		c := condition{}
		c.Status, _ = m["status"].(string)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		c.ObservedGeneration, _, _ = unstructured.NestedInt64(m, "observedGeneration")
		return c, true
	}
	return condition{}, false
}

// waitCondition waits until the object's condition typ has status and
// reason, and returns the object.
func waitCondition(t *testing.T, w *world, gvr schema.GroupVersionResource, name, typ, status, reason string) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	harness.Eventually(t, converge, fmt.Sprintf("%s %s: condition %s=%s (%s)", gvr.Resource, name, typ, status, reason), func(ctx context.Context) (bool, string, error) {
		u, err := w.C.Dynamic.Resource(gvr).Namespace(w.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", client404(err)
		}
		got = u
		c, ok := conditionOf(u, typ)
		return ok && c.Status == status && c.Reason == reason, c.String(), nil
	})
	return got
}

// eventsFor lists the Events about an object (events.k8s.io and core/v1
// Events are one resource; this reads the core view, as kubectl describe
// does), oldest first.
func eventsFor(ctx context.Context, c *harness.Clients, ns, name string) ([]corev1.Event, error) {
	list, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitEvent waits for an Event about the object with this type and reason
// whose note contains text, and returns it.
func waitEvent(t *testing.T, c *harness.Clients, ns, name, typ, reason, text string) corev1.Event {
	t.Helper()
	var found corev1.Event
	harness.Eventually(t, converge, fmt.Sprintf("a %s %s Event about %s/%s", typ, reason, ns, name), func(ctx context.Context) (bool, string, error) {
		evs, err := eventsFor(ctx, c, ns, name)
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range evs {
			if e.Type == typ && e.Reason == reason && strings.Contains(e.Message, text) {
				found = e
				return true, "", nil
			}
			seen = append(seen, e.Type+" "+e.Reason+": "+e.Message)
		}
		return false, strings.Join(seen, "; "), nil
	})
	return found
}

// waitGone waits until get says NotFound.
func waitGone(t *testing.T, what string, get func(ctx context.Context) error) {
	t.Helper()
	harness.Eventually(t, converge, what+" to be gone", func(ctx context.Context) (bool, string, error) {
		err := get(ctx)
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", err
	})
}

// seatHoldsIn lists the seat holds in a ledger namespace.
func seatHoldsIn(ctx context.Context, c *harness.Clients, ledger string) ([]corev1.ConfigMap, error) {
	list, err := c.Kube.CoreV1().ConfigMaps(ledger).List(ctx, metav1.ListOptions{LabelSelector: seatHolds})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// heldTickets is the "ticket" data key ("ns/name") of each hold, sorted:
// the tickets a ledger holds seats for.
func heldTickets(holds []corev1.ConfigMap) []string {
	out := make([]string, 0, len(holds))
	for _, h := range holds {
		out = append(out, h.Data["ticket"])
	}
	slices.Sort(out)
	return out
}

// waitHeldTickets waits until the ledger's seat holds are those of exactly
// the tickets want ("ns/name"), and returns the holds.
func waitHeldTickets(t *testing.T, c *harness.Clients, ledger string, want ...string) []corev1.ConfigMap {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	var holds []corev1.ConfigMap
	harness.Eventually(t, converge, fmt.Sprintf("ledger %s to hold seats for exactly %v", ledger, want), func(ctx context.Context) (bool, string, error) {
		var err error
		if holds, err = seatHoldsIn(ctx, c, ledger); err != nil {
			return false, "", err
		}
		got := heldTickets(holds)
		return slices.Equal(got, want), fmt.Sprintf("holds for %v", got), nil
	})
	return holds
}

// waitHoldGone waits until the ledger has no ConfigMap at the hold name of
// ticket ns/name.
func waitHoldGone(t *testing.T, c *harness.Clients, ledger, ns, name string) {
	t.Helper()
	waitGone(t, fmt.Sprintf("seat hold %s/%s.%s", ledger, ns, name), func(ctx context.Context) error {
		_, err := c.Kube.CoreV1().ConfigMaps(ledger).Get(ctx, ns+"."+name, metav1.GetOptions{})
		return err
	})
}

// waitConditions waits until the ticket's conditions have the statuses in
// want (condition type to status), whatever their reasons, all at once.
func waitConditions(t *testing.T, w *world, name string, want map[string]string) *unstructured.Unstructured {
	t.Helper()
	var got *unstructured.Unstructured
	harness.Eventually(t, converge, fmt.Sprintf("ticket %s: conditions %v", name, want), func(ctx context.Context) (bool, string, error) {
		u, err := w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", client404(err)
		}
		got = u
		ok := true
		var seen []string
		for typ, status := range want {
			c, _ := conditionOf(u, typ)
			ok = ok && c.Status == status
			seen = append(seen, typ+" "+c.String())
		}
		slices.Sort(seen)
		return ok, strings.Join(seen, "; "), nil
	})
	return got
}

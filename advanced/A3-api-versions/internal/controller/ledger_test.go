package controller

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flightsv1 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/flights/v1"
)

// The seat ledger heals as the Deployments do: the tests below give the
// reconciler a ledger in each wrong state and check what it leaves.

func bookedTicket(t *testing.T) (*testClient, *FlightTicketReconciler) {
	t.Helper()
	c := newClient(t, nil, interceptor.Funcs{}, testTicket())
	r, _ := ticketReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	return c, r
}

// stripFinalizer removes the booked ticket's finalizer, as someone
// unsticking a Terminating object would, and returns the ticket.
func stripFinalizer(t *testing.T, c *testClient) *flightsv1.FlightTicket {
	t.Helper()
	tk := getTicket(t, c)
	tk.Finalizers = nil
	if err := c.Update(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

// A booked ticket whose hold was deleted (by hand, or with the whole ledger
// namespace) gets it back, and stays Booked.
func TestMissingHoldIsMadeAgain(t *testing.T) {
	c, r := bookedTicket(t)
	hold, _ := getHold(t, c)
	if err := c.Delete(t.Context(), hold); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	again, err := getHold(t, c)
	if err != nil {
		t.Fatalf("the hold was not made again: %v", err)
	}
	if again.Data["seats"] != "2" || again.Data["ticket"] != "lab/t" {
		t.Errorf("hold data = %v", again.Data)
	}
	if !meta.IsStatusConditionTrue(getTicket(t, c).Status.Conditions, flightsv1.ConditionBooked) {
		t.Error("the ticket is no longer Booked")
	}
}

// A hold whose ticket is gone is deleted: the ticket went without its
// finalizer (someone stripped it), or a write of an operator that died
// landed after the release.
func TestHoldOfAGoneTicketIsReleased(t *testing.T) {
	c, r := bookedTicket(t)
	tk := stripFinalizer(t, c)
	if err := c.Delete(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	if _, err := getHold(t, c); !apierrors.IsNotFound(err) {
		t.Errorf("the hold of a ticket that is gone is still there (err=%v)", err)
	}
}

// A ticket whose finalizer someone removed gets it back.
func TestStrippedFinalizerIsAddedAgain(t *testing.T) {
	c, r := bookedTicket(t)
	stripFinalizer(t, c)
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	if got := getTicket(t, c).Finalizers; !slices.Contains(got, ticketFinalizer) {
		t.Errorf("finalizers = %v, want %s again", got, ticketFinalizer)
	}
}

// A ConfigMap that is not a seat hold, at the name of a ticket's hold, is
// never written nor deleted: the ticket is Degraded and says why.
func TestForeignConfigMapAtTheHoldsNameIsNotTouched(t *testing.T) {
	foreign := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ledgerNS, Name: "lab.t", UID: "foreign-uid"},
		Data:       map[string]string{"ca.crt": "not a seat"},
	}
	c := newClient(t, nil, interceptor.Funcs{}, testTicket(), foreign)
	r, rec := ticketReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err == nil {
		t.Error("Reconcile returned no error; the hold must be retried")
	}
	degraded := meta.FindStatusCondition(getTicket(t, c).Status.Conditions, flightsv1.ConditionDegraded)
	if degraded == nil || degraded.Status != metav1.ConditionTrue || degraded.Reason != flightsv1.ReasonHoldFailed ||
		!strings.Contains(degraded.Message, "is not a seat hold of this ticket") {
		t.Errorf("Degraded = %+v", degraded)
	}
	if e := nextEvent(rec); !strings.HasPrefix(e, "Warning Failed") {
		t.Errorf("event = %q, want Warning Failed", e)
	}

	tk := getTicket(t, c)
	if err := c.Delete(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	var after corev1.ConfigMap
	if err := c.Live.Get(t.Context(), types.NamespacedName{Namespace: ledgerNS, Name: "lab.t"}, &after); err != nil {
		t.Fatalf("the foreign ConfigMap is gone: %v", err)
	}
	if after.UID != foreign.UID || !maps.Equal(after.Data, foreign.Data) || len(after.Labels) != 0 {
		t.Errorf("the foreign ConfigMap was changed: %+v", after)
	}
}

// A hold made a moment ago whose event has not reached the cache: the create
// is refused as AlreadyExists, the API server shows it is the ticket's own,
// and the ticket is booked, not Degraded.
func TestOwnHoldNotYetCachedIsNoConflict(t *testing.T) {
	tk := testTicket()
	tk.Finalizers = []string{ticketFinalizer}
	c := newClient(t, nil, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if _, ok := o.(*corev1.ConfigMap); ok {
				return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name) // not in the cache yet
			}
			return c.Get(ctx, key, o, opts...)
		},
	}, tk, seatHoldFor(tk, ledgerNS))
	r, _ := ticketReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	got := getTicket(t, c).Status.Conditions
	if !meta.IsStatusConditionTrue(got, flightsv1.ConditionBooked) || !meta.IsStatusConditionFalse(got, flightsv1.ConditionDegraded) {
		t.Errorf("conditions = %+v, want Booked and not Degraded", got)
	}
}

package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flightsv1 "github.com/operator-flow/operator-flow/06-status-and-owners/api/flights/v1"
)

// A 409 Conflict says that the cache was behind the API server, not that a
// write failed; the tests below hold Reconcile to that.

// A ticket booked for 2 seats and edited to 5: the reconcile that the
// status write's event brings reads the hold from a cache that has not seen
// the patch to 5 yet. Its patch, computed from the 2-seat hold, gets 409.
// The ticket stays booked for 5: no Warning Event, no Degraded.
func TestStaleHoldConflictIsNotAFailedBooking(t *testing.T) {
	var stale *corev1.ConfigMap // the hold as the lagging cache has it
	c := newClient(t, nil, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if cm, ok := o.(*corev1.ConfigMap); ok && stale != nil {
				stale.DeepCopyInto(cm)
				return nil
			}
			return c.Get(ctx, key, o, opts...)
		},
	}, testTicket())
	r, rec := ticketReconciler(c)
	ctx := t.Context()
	if _, err := r.Reconcile(ctx, request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	nextEvent(rec)
	twoSeats, err := getHold(t, c)
	if err != nil {
		t.Fatal(err)
	}
	five := getTicket(t, c)
	five.Spec.Number, five.Generation = 5, 2
	if err := c.Update(ctx, five); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	nextEvent(rec) // Booked 5
	stale = twoSeats
	// The status write's event.
	res, err := r.Reconcile(ctx, request("lab", "t"))
	if err != nil || res.RequeueAfter == 0 {
		t.Errorf("reconcile after the status event returned %+v, %v; want a requeue and no error", res, err)
	}
	got := getTicket(t, c)
	if got.Status.Phase != flightsv1.PhaseBooked || got.Status.Message != "Booked 5 seat(s) from Amsterdam to Lisbon" {
		t.Errorf("a 409 from a lagging hold cache un-booked the ticket: phase=%q message=%q", got.Status.Phase, got.Status.Message)
	}
	if e := nextEvent(rec); e != "" {
		t.Errorf("a 409 from a lagging hold cache recorded %q", e)
	}
	// The cache catches up: nothing to write, no second Booked Event.
	stale = nil
	if _, err := r.Reconcile(ctx, request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(rec); e != "" {
		t.Errorf("after the cache caught up: %q, want no Event", e)
	}
}

// A ticket deleted while the hold cache is a write behind: the release's
// delete, with the cached resourceVersion as its precondition, gets 409.
// No failed release either: no Warning Event, no Degraded.
func TestStaleHoldConflictIsNotAFailedRelease(t *testing.T) {
	conflict := true
	c := newClient(t, nil, interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			if _, ok := o.(*corev1.ConfigMap); ok && conflict {
				conflict = false
				return apierrors.NewConflict(corev1.Resource("configmaps"), o.GetName(), errors.New("the object has been modified"))
			}
			return c.Delete(ctx, o, opts...)
		},
	}, testTicket())
	r, rec := ticketReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	nextEvent(rec)
	if err := c.Delete(t.Context(), getTicket(t, c)); err != nil {
		t.Fatal(err)
	}
	res, err := r.Reconcile(t.Context(), request("lab", "t"))
	if err != nil || res.RequeueAfter == 0 {
		t.Errorf("Reconcile after the release's 409 returned %+v, %v; want a requeue and no error", res, err)
	}
	if e := nextEvent(rec); e != "" {
		t.Errorf("a 409 from a lagging hold cache recorded %q", e)
	}
	if d := meta.FindStatusCondition(getTicket(t, c).Status.Conditions, flightsv1.ConditionDegraded); d == nil || d.Status != metav1.ConditionFalse {
		t.Errorf("Degraded = %+v after a 409, want False", d)
	}
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(rec); !strings.HasPrefix(e, "Normal Deleted") {
		t.Errorf("event = %q, want Normal Deleted", e)
	}
}

// A status patch computed from a cache one write behind gets 409: Reconcile
// asks for a requeue and returns no error, so that controller-runtime does
// not log "Reconciler error" nor count it in
// controller_runtime_reconcile_errors_total.
func TestStatusConflictIsARequeueNotAnError(t *testing.T) {
	conflictOnce := func() interceptor.Funcs {
		sent := false
		return interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if !sent {
				sent = true
				return apierrors.NewConflict(schema.GroupResource{Resource: "status"}, o.GetName(), errors.New("the object has been modified"))
			}
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		}}
	}
	t.Run("FlightTicket", func(t *testing.T) {
		r, _ := ticketReconciler(newClient(t, nil, conflictOnce(), testTicket()))
		res, err := r.Reconcile(t.Context(), request("lab", "t"))
		if err != nil || res.RequeueAfter == 0 {
			t.Errorf("Reconcile after a status 409 returned %+v, %v; want a requeue and no error", res, err)
		}
	})
	t.Run("Logger", func(t *testing.T) {
		r, _ := loggerReconciler(newClient(t, nil, conflictOnce(), testLogger()))
		res, err := r.Reconcile(t.Context(), request("lab", "heartbeat"))
		if err != nil || res.RequeueAfter == 0 {
			t.Errorf("Reconcile after a status 409 returned %+v, %v; want a requeue and no error", res, err)
		}
	})
}

// A hold refused with words that change at every try (a quota's "used:"):
// 10 retries write the Degraded status once. A new message would be a
// status write each time, and its event a reconcile at once, past the
// backoff. Each try's words are in its Warning Event.
func TestChangingHoldErrorWritesStatusOnce(t *testing.T) {
	tries, statusWrites := 0, 0
	c := newClient(t, nil, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if _, ok := o.(*corev1.ConfigMap); ok {
				tries++
				return apierrors.NewForbidden(corev1.Resource("configmaps"), o.GetName(), fmt.Errorf("exceeded quota: holds, used: configmaps=%d", tries))
			}
			return c.Create(ctx, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			statusWrites++
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	}, testTicket())
	r, rec := ticketReconciler(c)
	for i := 1; i <= 10; i++ {
		if _, err := r.Reconcile(t.Context(), request("lab", "t")); err == nil {
			t.Fatal("Reconcile returned no error; the hold must be retried with backoff")
		}
		if e := nextEvent(rec); !strings.HasPrefix(e, "Warning Failed") || !strings.Contains(e, fmt.Sprintf("used: configmaps=%d", i)) {
			t.Errorf("try %d: Event %q, want Warning Failed with this try's words", i, e)
		}
	}
	if statusWrites > 1 {
		t.Errorf("10 tries refused with changing words wrote the status %d times, want 1", statusWrites)
	}
	if got := getTicket(t, c); !strings.Contains(got.Status.Message, "used: configmaps=1") {
		t.Errorf("status.message = %q, want the words of the first refusal", got.Status.Message)
	}
}

// The same for a Logger whose Deployment is refused with changing words.
func TestChangingCreateErrorWritesStatusOnce(t *testing.T) {
	tries, statusWrites := 0, 0
	c := newClient(t, nil, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			tries++
			return apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, o.GetName(), fmt.Errorf("exceeded quota: no-deployments, used: count/deployments.apps=%d", tries))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			statusWrites++
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	}, testLogger())
	r, rec := loggerReconciler(c)
	for range 10 {
		if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); err == nil {
			t.Fatal("Reconcile returned no error; the create must be retried with backoff")
		}
		nextEvent(rec)
	}
	if statusWrites > 1 {
		t.Errorf("10 tries refused with changing words wrote the status %d times, want 1", statusWrites)
	}
}

// With --namespace, the cache holds the tickets of that namespace only; a
// hold of a ticket of another namespace (a ledger shared with an operator
// that watches another) must queue nothing: the cache cannot serve its key,
// and its reconcile would fail at every retry.
func TestHoldOfAnUnwatchedNamespaceQueuesNothing(t *testing.T) {
	hold := func(ticket string) *corev1.ConfigMap {
		return &corev1.ConfigMap{Data: map[string]string{ticketKey: ticket}}
	}
	for _, tc := range []struct {
		watched, ticket string
		want            int
	}{
		{"lab", "lab/t", 1},
		{"lab", "other/t", 0},
		{"", "other/t", 1}, // every namespace watched
	} {
		r := &FlightTicketReconciler{Namespace: tc.watched}
		if got := r.ticketOfHold(t.Context(), hold(tc.ticket)); len(got) != tc.want {
			t.Errorf("--namespace=%q, a hold of %s: %d requests %v, want %d", tc.watched, tc.ticket, len(got), got, tc.want)
		}
	}
}

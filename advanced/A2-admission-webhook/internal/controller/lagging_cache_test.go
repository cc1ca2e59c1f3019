package controller

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	examplev1 "github.com/operator-flow/operator-flow/advanced/A2-admission-webhook/api/example/v1"
	flightsv1 "github.com/operator-flow/operator-flow/advanced/A2-admission-webhook/api/flights/v1"
)

// The cache can be behind the API server, and a status is computed from the
// cached copy. These tests play the race of an edit made while a reconcile
// runs: a user's edit of the spec lands just before the operator's status
// write, and the next read from the cache shows the object as that edit
// left it, without the status write that followed; the reads after it show
// the API server's copy, as a cache that has caught up. The status the API
// server ends up with must be the one the spec asks for.

// race is one such race on the object key of type T.
type race[T client.Object] struct {
	c     *testClient
	key   types.NamespacedName
	edit  func(T) // the user's edit of the spec
	armed bool    // the next status write lets the edit land first
	stale T       // the cached copy, once the edit has landed
	lags  bool    // the next Get returns stale
}

// funcs are the interceptors that play it: the first status write of a T
// after armed is set first applies the edit on the API server; the Get of a
// T after that returns the stale copy, once.
func (r *race[T]) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if _, ok := o.(T); ok && r.lags && key == r.key {
				r.lags = false
				reflect.ValueOf(o).Elem().Set(reflect.ValueOf(r.stale.DeepCopyObject()).Elem())
				return nil
			}
			return c.Get(ctx, key, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			if _, ok := o.(T); ok && r.armed {
				r.armed = false
				live := o.DeepCopyObject().(T)
				if err := r.c.Live.Get(ctx, r.key, live); err != nil {
					return err
				}
				r.edit(live)
				live.SetGeneration(live.GetGeneration() + 1) // as the API server does for a spec change
				if err := c.Update(ctx, live); err != nil {
					return err
				}
				r.stale, r.lags = live, true
			}
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	}
}

// reconcileUntilDone runs reconcile until it returns no error and no
// requeue, as controller-runtime's retries and requeues would, at most 5
// times.
func reconcileUntilDone(t *testing.T, reconcile func() (ctrl.Result, error)) {
	t.Helper()
	var (
		res ctrl.Result
		err error
	)
	for range 5 {
		if res, err = reconcile(); err == nil && res.IsZero() {
			return
		}
		t.Logf("again after: %+v, %v", res, err)
	}
	t.Fatalf("still not done after 5 tries: %+v, %v", res, err)
}

// A ticket edited from 2 seats to 5 and back to 2 while the operator books
// the 5: the status must end up saying 2, at the last generation. Computed
// from the stale copy without a resourceVersion, a merge patch would leave
// out the message, which the stale copy already had as "Booked 2", and the
// API server would keep "Booked 5".
func TestTicketStatusFromALaggingCache(t *testing.T) {
	rc := &race[*flightsv1.FlightTicket]{key: types.NamespacedName{Namespace: "lab", Name: "t"},
		edit: func(tk *flightsv1.FlightTicket) { tk.Spec.Number = 2 }}
	rc.c = newClient(t, nil, rc.funcs(), testTicket())
	r, _ := ticketReconciler(rc.c)
	ctx := t.Context()
	if _, err := r.Reconcile(ctx, request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	five := getTicket(t, rc.c)
	five.Spec.Number, five.Generation = 5, 2
	if err := rc.c.Update(ctx, five); err != nil {
		t.Fatal(err)
	}
	rc.armed = true // back to 2 seats while the 5 are booked
	reconcileUntilDone(t, func() (ctrl.Result, error) { return r.Reconcile(ctx, request("lab", "t")) })
	// The edit's own event.
	reconcileUntilDone(t, func() (ctrl.Result, error) { return r.Reconcile(ctx, request("lab", "t")) })

	var got flightsv1.FlightTicket
	if err := rc.c.Live.Get(ctx, rc.key, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Number != 2 || got.Status.ObservedGeneration != got.Generation || got.Status.Message != "Booked 2 seat(s) from Amsterdam to Lisbon" {
		t.Errorf("spec.number=%d generation=%d, status: observedGeneration=%d message=%q; want the message of 2 seats at generation %d",
			got.Spec.Number, got.Generation, got.Status.ObservedGeneration, got.Status.Message, got.Generation)
	}
	if hold, err := getHold(t, rc.c); err != nil || hold.Data["seats"] != "2" {
		t.Errorf("seat hold %v (err %v), want 2 seats", hold.Data, err)
	}
}

// A Logger whose Deployment becomes available and then not, while its spec
// is edited: the status must end up Unavailable. Computed from the stale
// copy (state Unavailable) without a resourceVersion, a merge patch would
// leave state out, and the API server would keep the Available written in
// between.
func TestLoggerStatusFromALaggingCache(t *testing.T) {
	logger := testLogger()
	logger.UID, logger.Generation = "uid-1", 1
	rc := &race[*examplev1.Logger]{key: types.NamespacedName{Namespace: "lab", Name: "heartbeat"},
		edit: func(l *examplev1.Logger) { l.Spec.TimeInterval = 7 }}
	rc.c = newClient(t, nil, rc.funcs(), logger)
	r, _ := loggerReconciler(rc.c)
	ctx := t.Context()
	if _, err := r.Reconcile(ctx, request("lab", "heartbeat")); err != nil {
		t.Fatal(err)
	}
	setAvailable := func(n int32) {
		t.Helper()
		d := getDeployment(t, rc.c)
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, AvailableReplicas: n}
		if err := rc.c.Status().Update(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	setAvailable(1)
	rc.armed = true // the spec edit lands just before the Available status write
	reconcileUntilDone(t, func() (ctrl.Result, error) { return r.Reconcile(ctx, request("lab", "heartbeat")) })
	setAvailable(0)
	reconcileUntilDone(t, func() (ctrl.Result, error) { return r.Reconcile(ctx, request("lab", "heartbeat")) })

	var got examplev1.Logger
	if err := rc.c.Live.Get(ctx, rc.key, &got); err != nil {
		t.Fatal(err)
	}
	available := meta.FindStatusCondition(got.Status.Conditions, examplev1.ConditionAvailable)
	if got.Status.State != examplev1.StateUnavailable || available == nil || available.Status != "False" || got.Status.ObservedGeneration != got.Generation {
		t.Errorf("generation=%d, status: state=%q Available=%+v observedGeneration=%d; want Unavailable at generation %d",
			got.Generation, got.Status.State, available, got.Status.ObservedGeneration, got.Generation)
	}
}

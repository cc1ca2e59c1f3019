package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	flightsv1 "github.com/operator-flow/operator-flow/advanced/A2-admission-webhook/api/flights/v1"
)

// The permissions of the ticket controller, for controller-gen
// (config/rbac/role.yaml). No "get": reads go to the cache, which lists and
// watches. Status has a verb of its own now, patch on flighttickets/status,
// which the generated editor role does not grant; Events are recorded
// through the events.k8s.io API.
//
// +kubebuilder:rbac:groups=flights.com,resources=flighttickets,verbs=list;watch;patch
// +kubebuilder:rbac:groups=flights.com,resources=flighttickets/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// ticketFinalizer keeps a deleted ticket in the API server until the operator
// has given its seats back. Finalizers are names qualified by a domain, so
// that controllers never remove each other's.
const ticketFinalizer = "flights.com/release-seats"

// FlightTicketReconciler is the ticket controller. It holds each ticket's
// seats in the seat ledger and gives them back when the ticket is deleted.
type FlightTicketReconciler struct {
	client.Client
	Ledger   *SeatLedger
	Recorder recorder.EventRecorder
	// Namespace is the one namespace whose tickets the cache holds
	// (--namespace), or "" for all (ticketOfHold).
	Namespace string
}

// SetupWithManager registers the controller: watches on FlightTickets and on
// seat holds, each event queueing a ticket's namespace/name, and workers
// reconciles at a time (04's --workers). The informers, the cache, the
// rate-limited queue, the workers and the retries are controller-runtime's
// now. A hold's event queues the ticket the hold names (ticketOfHold), as
// Owns maps a Deployment's event to its Logger.
//
// No predicate: every update of a ticket reconciles it, status writes
// included, the operator's own too. GenerationChangedPredicate, the usual
// filter, drops every update that leaves metadata.generation alone, and
// three of those matter here: a finalizer stripped by hand, the periodic
// resync, and the event of the operator's own status write, which is what
// catches a status decided from a cache that had not yet seen the write
// before it (writeStatus). An event that changes nothing the operator
// decides (its own status write, a resync) costs a reconcile that reads the
// cache and writes nothing; a stripped finalizer or a wrong status is
// written back. While a write keeps failing, the Degraded status is written
// once (sameFailure), and its event costs one early retry; the retries
// after it back off.
func (r *FlightTicketReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&flightsv1.FlightTicket{}).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.ticketOfHold)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// Reconcile is the ticket controller's syncHandler: it makes the ticket's
// seat hold match its spec, and its status say that it is booked, and gives
// the seats back when the ticket is deleted. Status goes to the /status
// subresource now.
// controller-runtime's workers call it, as 04's called syncTicket; an error
// returned is retried with backoff, a 409 Conflict requeued
// (requeueOnConflict).
func (r *FlightTicketReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	defer func() { result, err = requeueOnConflict(ctx, result, err) }()
	log := logf.FromContext(ctx) // carries the ticket's namespace and name
	// Step 1: read the ticket. From the cache: no request. The informer
	// applies events in order, so this is the newest state it has seen,
	// however many events queued this key. t is a deep copy, ours to change.
	var t flightsv1.FlightTicket
	if err := r.Get(ctx, req.NamespacedName, &t); apierrors.IsNotFound(err) {
		// Gone. The finalizer lets a ticket go only once its seats are
		// given back, so there is normally no hold left. One is left when
		// the finalizer could not do its work: someone stripped it, or a
		// hold write of an operator that died landed after the release.
		// The hold's own event brings us here; give its seats back.
		if released, err := r.Ledger.Release(ctx, req.NamespacedName); err != nil || !released {
			return ctrl.Result{}, err
		}
		log.Info("released the seats of a ticket that is gone")
		return ctrl.Result{}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}

	// Step 2: being deleted: give the seats back, then let the ticket go.
	if !t.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.release(ctx, &t)
	}
	// Step 3: on first sight, add the finalizer before holding any seat, so
	// that from the moment seats are held, the ticket cannot vanish without
	// this operator hearing of it, even while it is stopped. A finalizer
	// someone removed is added again here.
	if !controllerutil.ContainsFinalizer(&t, ticketFinalizer) {
		if err := r.addFinalizer(ctx, &t); err != nil {
			return ctrl.Result{}, err
		}
	}

	// Step 4: hold the seats: make the hold, or bring it to the spec. A hold
	// that is right already costs no request. A failure to hold the seats is
	// reported three ways: the Degraded condition (for `kubectl get` and
	// scripts), a Warning Event (for `kubectl describe`), and the returned
	// error, retried with backoff.
	held, err := r.Ledger.Hold(ctx, &t)
	if apierrors.IsConflict(err) {
		// The hold changed since the cache read it (the cache has not seen
		// our last patch yet): no failure, and the seats are still held.
		return ctrl.Result{}, err
	}
	if err != nil {
		recordFailure(r.Recorder, &t, "Hold", "Could not hold %d seat(s): %v", t.Spec.Number, err)
		if serr := r.writeStatus(ctx, &t, holdFailedStatus(&t, err)); serr != nil {
			log.Error(serr, "writing the Degraded condition")
		}
		return ctrl.Result{}, fmt.Errorf("holding seats: %w", err)
	}
	// Step 5: say so: the status, and the Booked Event when the status
	// changes. The seats are held before the status says so.
	want := bookedStatus(&t)
	if equality.Semantic.DeepEqual(t.Status, want) {
		if held {
			log.Info("seat hold written", "hold", r.Ledger.Namespace+"/"+holdName(req.NamespacedName))
		} else {
			log.Info("in sync", "key", req.String())
		}
		return ctrl.Result{}, nil
	}
	if err := r.writeStatus(ctx, &t, want); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(&t, nil, corev1.EventTypeNormal, EventReasonBooked, "Book", "%s (seat hold %s/%s)", want.Message, r.Ledger.Namespace, holdName(req.NamespacedName))
	log.Info("booked", "message", want.Message)
	return ctrl.Result{}, nil
}

// bookingMessage is status.message of a booked ticket (docs/behaviour.md).
func bookingMessage(s flightsv1.FlightTicketSpec) string {
	return fmt.Sprintf("Booked %d seat(s) from %s to %s", s.Number, s.From, s.To)
}

// addFinalizer adds ticketFinalizer with a merge patch. The patch carries
// the resourceVersion the cache had (MergeFromWithOptimisticLock): a merge
// patch replaces the whole finalizers list, and without the lock it would
// silently drop a finalizer another controller added since. A conflict is
// returned, and the retry reads the newer ticket.
func (r *FlightTicketReconciler) addFinalizer(ctx context.Context, t *flightsv1.FlightTicket) error {
	patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(t, ticketFinalizer)
	if err := r.Patch(ctx, t, patch); err != nil {
		return fmt.Errorf("adding finalizer %s: %w", ticketFinalizer, err)
	}
	return nil
}

// release runs when a ticket is being deleted: the API server has set
// deletionTimestamp and keeps the ticket as long as any finalizer remains.
// The seats go back first, the finalizer comes off last; if releasing fails,
// the ticket stays (Terminating, Degraded) and the release is retried with
// backoff. The seats go back even when our finalizer is gone (stripped),
// while another controller's finalizer keeps the ticket.
func (r *FlightTicketReconciler) release(ctx context.Context, t *flightsv1.FlightTicket) error {
	log := logf.FromContext(ctx)
	if _, err := r.Ledger.Release(ctx, client.ObjectKeyFromObject(t)); apierrors.IsConflict(err) {
		return err // the hold changed since the cache read it: no failure, as in Reconcile
	} else if err != nil {
		recordFailure(r.Recorder, t, "Release", "Could not give back the seats: %v", err)
		if serr := r.writeStatus(ctx, t, releaseFailedStatus(t, err)); serr != nil {
			log.Error(serr, "writing the Degraded condition")
		}
		return fmt.Errorf("releasing seats: %w", err)
	}
	if !controllerutil.ContainsFinalizer(t, ticketFinalizer) {
		return nil
	}
	// Optimistic lock for the same reason as in addFinalizer.
	patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(t, ticketFinalizer)
	if err := r.Patch(ctx, t, patch); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing finalizer %s: %w", ticketFinalizer, err))
	}
	// After the patch, so that a conflict retried does not say it twice.
	r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, EventReasonDeleted, "Release", "Gave the seats back (seat hold %s/%s deleted)", r.Ledger.Namespace, holdName(client.ObjectKeyFromObject(t)))
	log.Info("released seats; the ticket can go")
	return nil
}

// writeStatus sends the difference between the ticket's status and want as
// a JSON merge patch to flighttickets/status, e.g.
// {"metadata":{"resourceVersion":"812"},"status":{"observedGeneration":2,"message":"...","conditions":[...]}}.
// A merge patch leaves out every field the cached copy already has right,
// and the cache can be behind the API server: after an edit of spec.number
// from 2 to 5 and back to 2, the stored message may still say 5 while the
// cached copy says 2, as want does, and the patch would not carry it. So the
// patch carries the resourceVersion of the cached copy
// (MergeFromWithOptimisticLock): the API server refuses a patch computed
// from an older copy with 409 Conflict, and the retry computes it again from
// a newer one. The subresource ignores anything outside status, so this
// write cannot undo a spec edit made meanwhile.
func (r *FlightTicketReconciler) writeStatus(ctx context.Context, t *flightsv1.FlightTicket, want flightsv1.FlightTicketStatus) error {
	if equality.Semantic.DeepEqual(t.Status, want) {
		return nil
	}
	patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
	t.Status = want
	if err := r.Status().Patch(ctx, t, patch); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	return nil
}

// conflictRequeue is how long a key whose write got 409 Conflict waits
// before it is reconciled again (requeueOnConflict).
const conflictRequeue = time.Second

// requeueOnConflict turns a 409 Conflict into a requeue. Every write that
// carries a resourceVersion (a status patch, a finalizer's patch, a hold's
// patch or delete, an adoption) gets 409 when the cache it was computed from
// is a write behind the API server: routine when events come in quick
// succession, and no failure. The newer object's event often reconciles the
// key again, but not always: an orphan Deployment's event names no Logger
// (Owns maps by the controller reference the adoption failed to add), so
// the key is requeued. Returned as an error, the 409 would be logged as
// "Reconciler error" and counted in controller_runtime_reconcile_errors_total.
// RequeueAfter, as controller-runtime's Result.Requeue, deprecated, says.
func requeueOnConflict(ctx context.Context, result ctrl.Result, err error) (ctrl.Result, error) {
	if !apierrors.IsConflict(err) {
		return result, err
	}
	logf.FromContext(ctx).Info("the cache was behind the API server; reconciling again", "error", err.Error())
	return ctrl.Result{RequeueAfter: conflictRequeue}, nil
}

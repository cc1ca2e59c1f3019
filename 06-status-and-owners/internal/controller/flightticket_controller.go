package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	flightsv1 "github.com/operator-flow/operator-flow/06-status-and-owners/api/flights/v1"
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
}

// SetupWithManager registers the controller: a watch on FlightTickets that
// queues each ticket's namespace/name, and workers reconciles at a time
// (04's --workers). The informer, the cache, the rate-limited queue, the
// workers and the retries are controller-runtime's now.
//
// GenerationChangedPredicate drops the update events in which
// metadata.generation did not move: with the status subresource, every
// status write, our own included. A ticket's status is computed from its
// spec alone, so none of those needs a reconcile; without the predicate,
// the Degraded status written while a failing ledger write waits for its
// retry would wake the reconciler at once and cut the backoff short.
func (r *FlightTicketReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&flightsv1.FlightTicket{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// Reconcile is the ticket controller's syncHandler: it makes the status of
// the ticket behind req say that it is booked, once its seats are held, and
// gives the seats back when the ticket is deleted. Status goes to the
// /status subresource now.
// controller-runtime's workers call it, as 04's called syncTicket; an error
// returned is retried with backoff.
func (r *FlightTicketReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx) // carries the ticket's namespace and name
	// Step 1: read the ticket. From the cache: no request. The informer
	// applies events in order, so this is the newest state it has seen,
	// however many events queued this key. t is a deep copy, ours to change.
	var t flightsv1.FlightTicket
	if err := r.Get(ctx, req.NamespacedName, &t); err != nil {
		// Deleted: the finalizer lets a ticket go only once its seats are
		// given back, so nothing is left behind.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	// Step 2: being deleted: give the seats back, then let the ticket go.
	if !t.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.release(ctx, &t)
	}
	// Step 3: on first sight, add the finalizer before holding any seat, so
	// that from the moment seats are held, the ticket cannot vanish without
	// this operator hearing of it, even while it is stopped.
	if !controllerutil.ContainsFinalizer(&t, ticketFinalizer) {
		if err := r.addFinalizer(ctx, &t); err != nil {
			return ctrl.Result{}, err
		}
	}

	// Step 4: already booked for this generation of the spec: write
	// nothing. The seats are held before the status says so, so the status
	// is proof enough; the ledger is never read.
	want := bookedStatus(&t)
	if equality.Semantic.DeepEqual(t.Status, want) {
		log.Info("in sync", "key", req.String())
		return ctrl.Result{}, nil
	}
	// Step 5: hold the seats, then write the status and the Booked Event.
	// A failure to hold the seats is reported three ways: the Degraded
	// condition (for `kubectl get` and scripts), a Warning Event (for
	// `kubectl describe`), and the returned error, retried with backoff.
	if err := r.Ledger.Hold(ctx, &t); err != nil {
		r.Recorder.Eventf(&t, nil, corev1.EventTypeWarning, EventReasonFailed, "Hold", "Could not hold %d seat(s): %v", t.Spec.Number, err)
		if serr := r.writeStatus(ctx, &t, holdFailedStatus(&t, err)); serr != nil {
			log.Error(serr, "writing the Degraded condition")
		}
		return ctrl.Result{}, fmt.Errorf("holding seats: %w", err)
	}
	if err := r.writeStatus(ctx, &t, want); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(&t, nil, corev1.EventTypeNormal, EventReasonBooked, "Book", "%s (seat hold %s/%s)", want.Message, r.Ledger.Namespace, holdName(&t))
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
// backoff, so seats are never silently leaked.
func (r *FlightTicketReconciler) release(ctx context.Context, t *flightsv1.FlightTicket) error {
	log := logf.FromContext(ctx)
	if !controllerutil.ContainsFinalizer(t, ticketFinalizer) {
		// Ours is done; another controller's finalizer keeps the ticket.
		return nil
	}
	if err := r.Ledger.Release(ctx, t); err != nil {
		r.Recorder.Eventf(t, nil, corev1.EventTypeWarning, EventReasonFailed, "Release", "Could not give back the seats: %v", err)
		if serr := r.writeStatus(ctx, t, releaseFailedStatus(t, err)); serr != nil {
			log.Error(serr, "writing the Degraded condition")
		}
		return fmt.Errorf("releasing seats: %w", err)
	}
	r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, EventReasonDeleted, "Release", "Gave the seats back (seat hold %s/%s deleted)", r.Ledger.Namespace, holdName(t))

	// Optimistic lock for the same reason as in addFinalizer.
	patch := client.MergeFromWithOptions(t.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(t, ticketFinalizer)
	if err := r.Patch(ctx, t, patch); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing finalizer %s: %w", ticketFinalizer, err))
	}
	log.Info("released seats; the ticket can go")
	return nil
}

// writeStatus sends the difference between the ticket's status and want as
// a JSON merge patch to flighttickets/status, e.g.
// {"status":{"observedGeneration":2,"message":"...","conditions":[...]}}.
// The subresource ignores anything outside status, so this write cannot
// undo a spec edit made meanwhile. (A merge patch replaces lists whole; that
// is safe for conditions because only the operator writes status, and it
// always sends the complete list.)
func (r *FlightTicketReconciler) writeStatus(ctx context.Context, t *flightsv1.FlightTicket, want flightsv1.FlightTicketStatus) error {
	if equality.Semantic.DeepEqual(t.Status, want) {
		return nil
	}
	patch := client.MergeFrom(t.DeepCopy())
	t.Status = want
	if err := r.Status().Patch(ctx, t, patch); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	return nil
}

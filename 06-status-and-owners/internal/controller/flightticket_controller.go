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

// The only permissions this controller needs; controller-gen turns them into
// config/rbac/role.yaml. There is no "get": every read goes to the Manager's
// cache, which lists and watches. Status has a verb of its own now: patch on
// flighttickets/status, which the generated editor role does not grant.
// Events are recorded through the events.k8s.io API.
//
// +kubebuilder:rbac:groups=flights.com,resources=flighttickets,verbs=list;watch;patch
// +kubebuilder:rbac:groups=flights.com,resources=flighttickets/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// ticketFinalizer keeps a deleted ticket in the API server until the operator
// has given its seats back. Finalizers are names qualified by a domain, so
// that controllers never remove each other's.
const ticketFinalizer = "flights.com/release-seats"

// FlightTicketReconciler books FlightTickets: it holds their seats in the
// seat ledger, writes the Booked condition, and gives the seats back when a
// ticket is deleted.
type FlightTicketReconciler struct {
	client.Client
	Ledger   *SeatLedger
	Recorder recorder.EventRecorder
}

// SetupWithManager registers the controller: one watch on FlightTickets, and
// workers reconciles running at the same time.
//
// GenerationChangedPredicate drops the update events in which
// metadata.generation did not move. With the status subresource, generation
// moves only when the spec changes (or deletion begins), so what is dropped
// is every status write, our own included, and metadata-only edits such as
// labels. A ticket's status is computed from its spec alone, never read back
// as an input, so none of those needs a reconcile. Without the predicate each
// of our own writes would come back as one more reconcile that finds the
// ticket in sync; worse, the Degraded status written while a failing ledger
// write is being retried would wake the reconciler at once and cut the
// backoff short.
func (r *FlightTicketReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&flightsv1.FlightTicket{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// Reconcile makes one ticket's seats and status match its spec. It is called
// with the ticket's namespace/name whenever the ticket's spec changes or its
// deletion begins, and again, with backoff, whenever it returns an error.
func (r *FlightTicketReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx) // already carries the ticket's namespace and name

	// 1. Read the ticket from the cache (a deep copy, ours to change).
	var ticket flightsv1.FlightTicket
	if err := r.Get(ctx, req.NamespacedName, &ticket); err != nil {
		// NotFound: the ticket is gone for good, which the finalizer
		// allows only after its seats were given back.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	// 2. Being deleted: give the seats back, then let the ticket go.
	if !ticket.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.release(ctx, &ticket)
	}

	// 3. First sight: add the finalizer before holding any seat, so that
	//    from the moment seats are held, the ticket cannot vanish without
	//    this operator hearing of it, even while it is stopped.
	if !controllerutil.ContainsFinalizer(&ticket, ticketFinalizer) {
		if err := r.addFinalizer(ctx, &ticket); err != nil {
			return ctrl.Result{}, err
		}
	}

	// 4. Already booked for this generation of the spec: do nothing. The
	//    seats were held before the status said so (step 5 comes first),
	//    so the status is proof enough; the ledger is never read.
	want := bookedStatus(&ticket)
	if equality.Semantic.DeepEqual(ticket.Status, want) {
		// docs/behaviour.md: "in sync" plus namespace/name, which tests
		// and `make bench` wait for.
		log.Info("in sync", "key", req.String())
		return ctrl.Result{}, nil
	}

	// 5. Hold the seats. A failure is reported three ways: the Degraded
	//    condition (for `kubectl get` and scripts), a Warning Event (for
	//    `kubectl describe`), and the returned error, which the controller
	//    logs and retries with backoff.
	if err := r.Ledger.Hold(ctx, &ticket); err != nil {
		r.Recorder.Eventf(&ticket, nil, corev1.EventTypeWarning, EventReasonFailed, "Hold", "Could not hold %d seat(s): %v", ticket.Spec.Number, err)
		if serr := r.writeStatus(ctx, &ticket, holdFailedStatus(&ticket, err)); serr != nil {
			log.Error(serr, "writing the Degraded condition")
		}
		return ctrl.Result{}, fmt.Errorf("holding seats: %w", err)
	}

	// 6. Write the status: a merge patch of what changed, sent to the
	//    /status subresource.
	if err := r.writeStatus(ctx, &ticket, want); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(&ticket, nil, corev1.EventTypeNormal, EventReasonBooked, "Book", "%s (seat hold %s/%s)", want.Message, r.Ledger.Namespace, holdName(&ticket))
	log.Info("booked", "message", want.Message)
	return ctrl.Result{}, nil
}

// addFinalizer adds ticketFinalizer with a merge patch. The patch carries
// the resourceVersion the cache had (MergeFromWithOptimisticLock): a merge
// patch replaces the whole finalizers list, and without the lock it would
// silently drop a finalizer another controller added since. A conflict is
// returned, and the retry reads the newer ticket.
func (r *FlightTicketReconciler) addFinalizer(ctx context.Context, ticket *flightsv1.FlightTicket) error {
	patch := client.MergeFromWithOptions(ticket.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(ticket, ticketFinalizer)
	if err := r.Patch(ctx, ticket, patch); err != nil {
		return fmt.Errorf("adding finalizer %s: %w", ticketFinalizer, err)
	}
	return nil
}

// release runs when a ticket is being deleted: the API server has set
// deletionTimestamp and keeps the ticket as long as any finalizer remains.
// The seats go back first, the finalizer comes off last; if releasing fails,
// the ticket stays (Terminating, Degraded) and the release is retried with
// backoff, so seats are never silently leaked.
func (r *FlightTicketReconciler) release(ctx context.Context, ticket *flightsv1.FlightTicket) error {
	log := logf.FromContext(ctx)
	if !controllerutil.ContainsFinalizer(ticket, ticketFinalizer) {
		// Ours is done; another controller's finalizer keeps the ticket.
		return nil
	}
	if err := r.Ledger.Release(ctx, ticket); err != nil {
		r.Recorder.Eventf(ticket, nil, corev1.EventTypeWarning, EventReasonFailed, "Release", "Could not give back the seats: %v", err)
		if serr := r.writeStatus(ctx, ticket, releaseFailedStatus(ticket, err)); serr != nil {
			log.Error(serr, "writing the Degraded condition")
		}
		return fmt.Errorf("releasing seats: %w", err)
	}
	r.Recorder.Eventf(ticket, nil, corev1.EventTypeNormal, EventReasonDeleted, "Release", "Gave the seats back (seat hold %s/%s deleted)", r.Ledger.Namespace, holdName(ticket))

	// Optimistic lock for the same reason as in addFinalizer.
	patch := client.MergeFromWithOptions(ticket.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(ticket, ticketFinalizer)
	if err := r.Patch(ctx, ticket, patch); err != nil {
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
func (r *FlightTicketReconciler) writeStatus(ctx context.Context, ticket *flightsv1.FlightTicket, want flightsv1.FlightTicketStatus) error {
	if equality.Semantic.DeepEqual(ticket.Status, want) {
		return nil
	}
	patch := client.MergeFrom(ticket.DeepCopy())
	ticket.Status = want
	if err := r.Status().Patch(ctx, ticket, patch); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	return nil
}

package controller

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	flightsv1 "github.com/operator-flow/operator-flow/05-controller-runtime/api/flights/v1"
)

// The only permissions this controller needs; controller-gen turns them into
// config/rbac/role.yaml. There is no "get": every read goes to the Manager's
// cache, which lists and watches.
//
// +kubebuilder:rbac:groups=flights.com,resources=flighttickets,verbs=list;watch;patch

// FlightTicketReconciler books FlightTickets: it writes status.phase and
// status.message, and nothing when they are already right.
type FlightTicketReconciler struct {
	client.Client
}

// SetupWithManager registers the controller: one watch on FlightTickets, and
// workers reconciles running at the same time (MaxConcurrentReconciles is
// 04's worker count). controller-runtime brings the informer, the cache, the
// rate-limited queue, the workers and the retries.
func (r *FlightTicketReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&flightsv1.FlightTicket{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// Reconcile makes one ticket's status match its spec. It is called with the
// ticket's namespace/name whenever the ticket changes, and again, with
// backoff, whenever it returns an error.
func (r *FlightTicketReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx) // already carries the ticket's namespace and name

	// 1. Read the ticket from the cache. client.Get hands back a deep copy,
	//    so the code below may change it without corrupting the cache.
	var ticket flightsv1.FlightTicket
	if err := r.Get(ctx, req.NamespacedName, &ticket); err != nil {
		// NotFound: the ticket was deleted. A booking leaves nothing behind
		// in this stage, so there is nothing to clean up.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	// 2. Already booked as asked: write nothing. Reconcile runs again after
	//    every change, including our own writes, so this check is what
	//    keeps a converged object quiet.
	msg := bookingMessage(ticket.Spec)
	if ticket.Status.Phase == flightsv1.PhaseBooked && ticket.Status.Message == msg {
		// docs/behaviour.md: "in sync" plus namespace/name, which tests
		// and `make bench` wait for.
		log.Info("in sync", "key", req.String())
		return ctrl.Result{}, nil
	}

	// 3. Write the status. Without a status subresource (stage 06 adds one)
	//    status is an ordinary part of the object. A merge patch made from
	//    the copy we read sends only the fields that changed:
	//    {"status":{"phase":"Booked","message":"..."}}. It carries no
	//    resourceVersion, so it cannot fail because our cached copy is a
	//    little behind, and it cannot undo a spec edit made meanwhile; that
	//    edit triggers another reconcile, which writes the new message.
	patch := client.MergeFrom(ticket.DeepCopy())
	ticket.Status = flightsv1.FlightTicketStatus{Phase: flightsv1.PhaseBooked, Message: msg}
	if err := r.Patch(ctx, &ticket, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing status: %w", err)
	}
	log.Info("booked", "message", msg)
	return ctrl.Result{}, nil
}

// bookingMessage is status.message of a booked ticket (docs/behaviour.md).
func bookingMessage(s flightsv1.FlightTicketSpec) string {
	return fmt.Sprintf("Booked %d seat(s) from %s to %s", s.Number, s.From, s.To)
}

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

// The permissions of the ticket controller, for controller-gen
// (config/rbac/role.yaml). No "get": reads go to the cache, which lists and
// watches.
//
// +kubebuilder:rbac:groups=flights.com,resources=flighttickets,verbs=list;watch;update

// FlightTicketReconciler is the ticket controller.
type FlightTicketReconciler struct {
	client.Client
}

// SetupWithManager registers the controller: a watch on FlightTickets that
// queues each ticket's namespace/name, and workers reconciles at a time
// (04's --workers). The informer, the cache, the rate-limited queue, the
// workers and the retries are controller-runtime's now.
func (r *FlightTicketReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&flightsv1.FlightTicket{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// Reconcile is the ticket controller's syncHandler: it makes the status of
// the ticket behind req say that it is booked. 01's CRD has no status
// subresource, so status is written like any other field.
// controller-runtime's workers call it, as 04's called syncTicket; an error
// returned is retried with backoff.
func (r *FlightTicketReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx) // carries the ticket's namespace and name
	// From the cache: no request. The informer applies events in order, so
	// this is the newest state it has seen, however many events queued
	// this key. t is a deep copy, ours to change (04 called DeepCopy).
	var t flightsv1.FlightTicket
	if err := r.Get(ctx, req.NamespacedName, &t); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err) // deleted: a ticket leaves nothing behind
	}
	msg := bookingMessage(t.Spec)
	if t.Status.Phase == flightsv1.PhaseBooked && t.Status.Message == msg {
		log.Info("in sync", "key", req.String())
		return ctrl.Result{}, nil
	}
	t.Status = flightsv1.FlightTicketStatus{Phase: flightsv1.PhaseBooked, Message: msg}
	// The Update carries t's resourceVersion: if the ticket changed since
	// the cache saw it, the API server answers 409 Conflict instead of
	// overwriting, and the key is tried again after a short wait, by when
	// the cache has the newer ticket.
	if err := r.Update(ctx, &t); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing status: %w", err)
	}
	log.Info("booked", "message", msg)
	return ctrl.Result{}, nil
}

// bookingMessage is status.message of a booked ticket (docs/behaviour.md).
func bookingMessage(s flightsv1.FlightTicketSpec) string {
	return fmt.Sprintf("Booked %d seat(s) from %s to %s", s.Number, s.From, s.To)
}

package main

import (
	"context"
	"fmt"
	"log"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

var ticketsGVR = schema.GroupVersionResource{Group: "flights.com", Version: "v1", Resource: "flighttickets"}

// phaseBooked is status.phase of a booked ticket.
const phaseBooked = "Booked"

// ticketSpec is what the operator reads from a FlightTicket's spec.
type ticketSpec struct {
	From, To string
	Number   int64
}

// handleTicket books every new or changed ticket. A deleted ticket needs
// nothing.
func (o *operator) handleTicket(ctx context.Context, typ watch.EventType, obj metav1.Object) error {
	if typ == watch.Deleted {
		return nil
	}
	return o.syncTicket(ctx, obj.GetNamespace(), obj.GetName())
}

// syncTicket makes a ticket's status say that it is booked. 01's CRD has no
// status subresource, so status is written with an Update of the whole
// object, like any other field.
func (o *operator) syncTicket(ctx context.Context, namespace, name string) error {
	r := o.dyn.Resource(ticketsGVR).Namespace(namespace)
	// The event is a snapshot from the past, and events wait their turn in
	// this loop. Without a cache, the only way to see the ticket as it is now
	// is to ask.
	u, err := r.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // deleted since; its DELETED event follows
	} else if err != nil {
		return err
	}
	spec, err := parseTicket(u)
	if err != nil {
		return err
	}
	msg := bookingMessage(spec)
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	current, _, _ := unstructured.NestedString(u.Object, "status", "message")
	if phase == phaseBooked && current == msg {
		log.Printf("in sync flighttickets %s/%s", namespace, name)
		return nil
	}
	// u came from our own GET: ours to change.
	if err := unstructured.SetNestedStringMap(u.Object, map[string]string{"phase": phaseBooked, "message": msg}, "status"); err != nil {
		return err
	}
	// The Update carries u's resourceVersion: if the ticket changed since the
	// GET, the API server answers 409 Conflict instead of overwriting.
	if _, err := r.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	log.Printf("booked flighttickets %s/%s: %s", namespace, name, msg)
	return nil
}

// parseTicket reads the spec from the raw JSON. The CRD's schema makes the
// fields present and typed, but the operator does not count on it: a field
// of the wrong type (stored before the schema said otherwise, or under
// another version's schema) becomes an error naming the field, not a crash.
func parseTicket(u *unstructured.Unstructured) (ticketSpec, error) {
	var s ticketSpec
	var err error
	if s.From, err = requiredString(u, "spec", "from"); err != nil {
		return s, err
	}
	if s.To, err = requiredString(u, "spec", "to"); err != nil {
		return s, err
	}
	s.Number, err = requiredInt(u, "spec", "number")
	return s, err
}

// bookingMessage is status.message of a booked ticket (docs/behaviour.md).
func bookingMessage(s ticketSpec) string {
	return fmt.Sprintf("Booked %d seat(s) from %s to %s", s.Number, s.From, s.To)
}

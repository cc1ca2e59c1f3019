package main

import (
	"context"
	"fmt"
	"log"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	flightsv1 "github.com/operator-flow/operator-flow/04-workqueue/api/flights/v1"
)

// syncTicket is the ticket controller's syncHandler: it makes the status of
// the ticket behind key say that it is booked. 01's CRD has no status
// subresource, so status is written with an Update of the whole object,
// like any other field.
func (o *operator) syncTicket(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return fmt.Errorf("%w: %v", errPermanent, err) // not a key our handlers make
	}
	// From the cache: no request. The informer applies events in order, so
	// this is the newest state it has seen, however many events queued
	// this key.
	t, err := o.tickets.FlightTickets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // deleted: a ticket leaves nothing behind
	} else if err != nil {
		return err
	}
	msg := bookingMessage(t.Spec)
	if t.Status.Phase == flightsv1.PhaseBooked && t.Status.Message == msg {
		log.Printf("in sync flighttickets %s/%s", namespace, name)
		return nil
	}
	// t is the cache's own copy, shared with every other reader of the
	// cache. Change a copy, never the original.
	t = t.DeepCopy()
	t.Status = flightsv1.FlightTicketStatus{Phase: flightsv1.PhaseBooked, Message: msg}
	// The Update carries t's resourceVersion: if the ticket changed since
	// the cache saw it, the API server answers 409 Conflict instead of
	// overwriting, and the key is tried again after a short wait, by when
	// the cache has the newer ticket.
	if _, err := o.client.FlightsV1().FlightTickets(namespace).Update(ctx, t, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing status: %w", err)
	}
	log.Printf("booked flighttickets %s/%s: %s", namespace, name, msg)
	return nil
}

// bookingMessage is status.message of a booked ticket (docs/behaviour.md).
func bookingMessage(s flightsv1.FlightTicketSpec) string {
	return fmt.Sprintf("Booked %d seat(s) from %s to %s", s.Number, s.From, s.To)
}

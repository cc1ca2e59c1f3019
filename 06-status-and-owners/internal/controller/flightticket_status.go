package controller

import (
	"fmt"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flightsv1 "github.com/operator-flow/operator-flow/06-status-and-owners/api/flights/v1"
)

// The status a ticket gets in each situation: pure functions of the ticket,
// so that tests need no cluster.

// bookingMessage is the booking, exactly as docs/behaviour.md words it.
func bookingMessage(spec flightsv1.FlightTicketSpec) string {
	return fmt.Sprintf("Booked %d seat(s) from %s to %s", spec.Number, spec.From, spec.To)
}

// bookedStatus is the status of a ticket whose seats are held for its
// current spec.
func bookedStatus(t *flightsv1.FlightTicket) flightsv1.FlightTicketStatus {
	return ticketStatus(t,
		metav1.Condition{Type: flightsv1.ConditionBooked, Status: metav1.ConditionTrue, Reason: flightsv1.ReasonSeatsHeld, Message: bookingMessage(t.Spec)},
		metav1.Condition{Type: flightsv1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: flightsv1.ReasonAsExpected, Message: "The seat ledger is up to date."},
	)
}

// holdFailedStatus: the seats could not be held.
func holdFailedStatus(t *flightsv1.FlightTicket, err error) flightsv1.FlightTicketStatus {
	msg := fmt.Sprintf("Could not hold %d seat(s) from %s to %s: %v", t.Spec.Number, t.Spec.From, t.Spec.To, err)
	return ticketStatus(t,
		metav1.Condition{Type: flightsv1.ConditionBooked, Status: metav1.ConditionFalse, Reason: flightsv1.ReasonHoldFailed, Message: msg},
		metav1.Condition{Type: flightsv1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: flightsv1.ReasonHoldFailed, Message: msg},
	)
}

// releaseFailedStatus: the ticket is being deleted and its seats could not
// be given back. Booked stays as it was: the seats are still held.
func releaseFailedStatus(t *flightsv1.FlightTicket, err error) flightsv1.FlightTicketStatus {
	return ticketStatus(t,
		metav1.Condition{Type: flightsv1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: flightsv1.ReasonReleaseFailed,
			Message: fmt.Sprintf("Deleting: could not give the seats back, the finalizer %s keeps the ticket until it can: %v", ticketFinalizer, err)},
	)
}

// ticketStatus is the ticket's current status with conds set, each marked
// with the generation it was observed at. meta.SetStatusCondition keeps a
// condition's lastTransitionTime unless its status flips, so writing the
// same conditions again changes nothing. phase and message are derived from
// the Booked condition.
func ticketStatus(t *flightsv1.FlightTicket, conds ...metav1.Condition) flightsv1.FlightTicketStatus {
	s := t.Status.DeepCopy()
	s.ObservedGeneration = t.Generation
	for _, c := range conds {
		c.ObservedGeneration = t.Generation
		c.Message = truncate(c.Message, maxConditionMessage)
		meta.SetStatusCondition(&s.Conditions, c)
	}
	s.Phase, s.Message = "", ""
	if booked := meta.FindStatusCondition(s.Conditions, flightsv1.ConditionBooked); booked != nil {
		if booked.Status == metav1.ConditionTrue {
			s.Phase = flightsv1.PhaseBooked
		}
		s.Message = truncate(booked.Message, maxTicketMessage)
	}
	return *s
}

const (
	// maxTicketMessage is status.message's maxLength in the CRD. A booking
	// message is at most 155 characters; only an error can be longer.
	maxTicketMessage = 256
	// maxConditionMessage keeps an error quoted in a condition readable;
	// the API allows 32768 characters.
	maxConditionMessage = 1024
)

// truncate shortens s to at most n characters, marking the cut with "...".
// A CRD's maxLength counts characters (Unicode code points), not bytes.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-len("...")]) + "..."
}

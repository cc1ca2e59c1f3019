package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flightsv1 "github.com/operator-flow/operator-flow/advanced/A2-admission-webhook/api/flights/v1"
)

// bookedStatus is the status of a ticket whose seats are held for its
// current spec.
func bookedStatus(t *flightsv1.FlightTicket) flightsv1.FlightTicketStatus {
	return ticketStatus(t,
		condition(flightsv1.ConditionBooked, true, flightsv1.ReasonSeatsHeld, "%s", bookingMessage(t.Spec)),
		condition(flightsv1.ConditionDegraded, false, flightsv1.ReasonAsExpected, "The seat ledger is up to date."),
	)
}

// holdFailedStatus: the seats could not be held.
func holdFailedStatus(t *flightsv1.FlightTicket, err error) flightsv1.FlightTicketStatus {
	msg := fmt.Sprintf("Could not hold %d seat(s) from %s to %s: %v", t.Spec.Number, t.Spec.From, t.Spec.To, err)
	return ticketStatus(t,
		sameFailure(t.Status.Conditions, t.Generation, condition(flightsv1.ConditionBooked, false, flightsv1.ReasonHoldFailed, "%s", msg)),
		sameFailure(t.Status.Conditions, t.Generation, condition(flightsv1.ConditionDegraded, true, flightsv1.ReasonHoldFailed, "%s", msg)),
	)
}

// releaseFailedStatus: the ticket is being deleted and its seats could not
// be given back. Booked stays as it was: the seats are still held.
func releaseFailedStatus(t *flightsv1.FlightTicket, err error) flightsv1.FlightTicketStatus {
	return ticketStatus(t, sameFailure(t.Status.Conditions, t.Generation,
		condition(flightsv1.ConditionDegraded, true, flightsv1.ReasonReleaseFailed,
			"Deleting: could not give the seats back, the finalizer %s keeps the ticket until it can: %v", ticketFinalizer, err)))
}

// ticketStatus is the ticket's status with conds set (conditions.go). phase
// and message repeat the Booked condition.
func ticketStatus(t *flightsv1.FlightTicket, conds ...metav1.Condition) flightsv1.FlightTicketStatus {
	s := t.Status.DeepCopy()
	s.ObservedGeneration = t.Generation
	setConditions(&s.Conditions, t.Generation, conds...)
	s.Phase, s.Message = "", ""
	if booked := meta.FindStatusCondition(s.Conditions, flightsv1.ConditionBooked); booked != nil {
		if booked.Status == metav1.ConditionTrue {
			s.Phase = flightsv1.PhaseBooked
		}
		s.Message = truncate(booked.Message, maxTicketMessage)
	}
	return *s
}

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How to read this file: doc comments (right above a type or field) become
// the CRD's descriptions, which `kubectl explain` shows to users; notes for
// the reader of the Go code are in comments separated from them by a blank
// line. Markers (+kubebuilder:...) become validation, defaults and printer
// columns. Together they must produce the same schema as 01's hand-written
// CRD; crd_test.go checks that.
//
// Integers are int32, as the Kubernetes API conventions ask. controller-gen
// would then write `format: int32`, which 01's CRD does not have, so each
// integer field carries +kubebuilder:validation:Format="" to leave it out.

// The CEL rule compares two fields, which an OpenAPI schema alone cannot do.
// fieldPath makes the API server's error name spec.to.
//
// +kubebuilder:validation:XValidation:rule="self.from != self.to",message="must differ from spec.from",fieldPath=".to"

// FlightTicketSpec is what the user asks for.
type FlightTicketSpec struct {
	// Where the flight departs, e.g. a city or an airport code.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	From string `json:"from"`

	// Where the flight arrives. Must differ from `from`.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	To string `json:"to"`

	// How many seats to book, from 1 to 10.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:validation:Format=""
	Number int32 `json:"number"`
}

// TicketPhase is where a booking stands.
// +kubebuilder:validation:Enum=Booked
type TicketPhase string

// PhaseBooked means the operator has booked the ticket.
const PhaseBooked TicketPhase = "Booked"

// FlightTicketStatus is what the operator observed and did. Written by the
// operator, never by users. In this stage status is an ordinary part of the
// object; stage 06 moves it to the /status subresource.
type FlightTicketStatus struct {
	// Booked once the operator has booked the ticket.
	// +optional
	Phase TicketPhase `json:"phase,omitempty"`

	// A human-readable line about the booking.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Message string `json:"message,omitempty"`
}

// There is deliberately no +kubebuilder:subresource:status marker: status is
// written with the rest of the object in this stage. Stage 06 adds it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ft,categories=operator-flow
// +kubebuilder:printcolumn:name="From",type=string,JSONPath=".spec.from"
// +kubebuilder:printcolumn:name="To",type=string,JSONPath=".spec.to"
// +kubebuilder:printcolumn:name="Number",type=integer,JSONPath=".spec.number"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"

// A FlightTicket asks the operator to book seats on a flight.
type FlightTicket struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// What the user asks for.
	Spec FlightTicketSpec `json:"spec"`
	// What the operator observed and did.
	// +optional
	Status FlightTicketStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// FlightTicketList is a list of FlightTickets, as LIST and the cache return it.
type FlightTicketList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlightTicket `json:"items"`
}

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

// The condition types of a FlightTicket, and the reasons the operator gives.
// Reasons are part of the API: scripts may switch on them, so they are
// constants, never built from error text.
const (
	// ConditionBooked is True once the seats the spec asks for are held in
	// the seat ledger.
	ConditionBooked = "Booked"
	// ConditionDegraded is True while the operator cannot write the seat
	// ledger, whether to hold seats or to give them back.
	ConditionDegraded = "Degraded"

	// ReasonSeatsHeld: Booked is True.
	ReasonSeatsHeld = "SeatsHeld"
	// ReasonAsExpected: Degraded is False.
	ReasonAsExpected = "AsExpected"
	// ReasonHoldFailed: the seats could not be held (Booked False, Degraded True).
	ReasonHoldFailed = "HoldFailed"
	// ReasonReleaseFailed: the ticket is being deleted and its seats could
	// not be given back; the finalizer keeps the ticket until they are.
	ReasonReleaseFailed = "ReleaseFailed"
)

// FlightTicketStatus is what the operator observed and did. It lives in the
// /status subresource: a write to the ticket itself cannot change it, and
// only those allowed to write flighttickets/status (the operator) can.
type FlightTicketStatus struct {
	// The metadata.generation this status was written for. When it is
	// below metadata.generation, the operator has not yet acted on the
	// latest spec.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// The conditions are the status; phase and message repeat what the
	// Booked condition says, for the printer columns and for readers of
	// stages 01 to 05.

	// Booked once the operator has booked the ticket (the Booked condition
	// is True).
	// +optional
	Phase TicketPhase `json:"phase,omitempty"`

	// A human-readable line about the booking: the Booked condition's message.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Message string `json:"message,omitempty"`

	// Booked and Degraded, each with the generation it was observed at.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// The status subresource splits the object in two: PUT and PATCH of the
// ticket ignore status, PUT and PATCH of flighttickets/status ignore
// everything else, and metadata.generation moves only when spec changes.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ft,categories=operator-flow
// +kubebuilder:printcolumn:name="From",type=string,JSONPath=".spec.from"
// +kubebuilder:printcolumn:name="To",type=string,JSONPath=".spec.to"
// +kubebuilder:printcolumn:name="Number",type=integer,JSONPath=".spec.number"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Booked\")].status",description="the Booked condition"
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

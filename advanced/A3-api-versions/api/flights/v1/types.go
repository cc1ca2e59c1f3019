package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// controller-gen reads the markers below and on the fields; together they
// must give 01's CRD schema (config/crd_test.go checks); Format="" leaves
// out the `format: int32` that 01's CRD does not have. subresource:status
// moves status to its own endpoint, flighttickets/status: a write to the
// ticket ignores status, a write to flighttickets/status ignores everything
// else, and metadata.generation moves when the spec changes or deletion
// begins.
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

// FlightTicket asks the operator to book seats on a flight.
type FlightTicket struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the name, namespace, labels and the rest that every
	// object has.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the user asks for.
	// +required
	Spec FlightTicketSpec `json:"spec,omitzero"`
	// status is what the operator did.
	// +optional
	Status FlightTicketStatus `json:"status,omitempty"`
}

// The CEL rule compares two fields, which an OpenAPI schema alone cannot do;
// fieldPath makes the API server's error name spec.to.
//
// +kubebuilder:validation:XValidation:rule="self.from != self.to",message="must differ from spec.from",fieldPath=".to"

// FlightTicketSpec is what the user asks for.
type FlightTicketSpec struct {
	// from is where the flight departs.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	From string `json:"from,omitempty"`
	// to is where the flight arrives; it differs from from.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	To string `json:"to,omitempty"`
	// number is how many seats to book, 1 to 10.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:validation:Format=""
	Number int32 `json:"number,omitempty"`
}

// FlightTicketStatus is what the operator did.
type FlightTicketStatus struct {
	// conditions are Booked and Degraded, each with the generation it was
	// observed at.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the metadata.generation this status was
	// written for. When it is below metadata.generation, the operator has
	// not yet acted on the latest generation: a spec change, or the start
	// of deletion.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// phase is Booked once the operator has booked the ticket: the Booked
	// condition, for the printer column.
	// +optional
	// +kubebuilder:validation:Enum=Booked
	Phase string `json:"phase,omitempty"`
	// message is a human-readable line about the booking: the Booked
	// condition's message.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Message string `json:"message,omitempty"`
}

// PhaseBooked is Status.Phase of a booked ticket.
const PhaseBooked = "Booked"

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

// FlightTicketList is what a LIST of FlightTickets returns.
//
// +kubebuilder:object:root=true
type FlightTicketList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []FlightTicket `json:"items"`
}

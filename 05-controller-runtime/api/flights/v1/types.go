package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// controller-gen reads the markers below and on the fields; together they
// must give 01's CRD schema (config/crd_test.go checks); Format="" leaves
// out the `format: int32` that 01's CRD does not have. No
// subresource:status yet: stage 06 adds it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ft,categories=operator-flow
// +kubebuilder:printcolumn:name="From",type=string,JSONPath=".spec.from"
// +kubebuilder:printcolumn:name="To",type=string,JSONPath=".spec.to"
// +kubebuilder:printcolumn:name="Number",type=integer,JSONPath=".spec.number"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
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
	// phase is Booked once the operator has booked the ticket.
	// +optional
	// +kubebuilder:validation:Enum=Booked
	Phase string `json:"phase,omitempty"`
	// message is a human-readable line about the booking.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Message string `json:"message,omitempty"`
}

// PhaseBooked is Status.Phase of a booked ticket.
const PhaseBooked = "Booked"

// FlightTicketList is what a LIST of FlightTickets returns.
//
// +kubebuilder:object:root=true
type FlightTicketList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []FlightTicket `json:"items"`
}

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlightTicket asks the operator to book seats on a flight.
//
// The tags below are read by the code generators. genclient: write a typed
// client for this kind, and a lister and an informer. genclient:noStatus:
// 01's CRD has no status subresource, so the client gets no UpdateStatus and
// status is written with Update, like the rest of the object. deepcopy-gen:
// make the type a runtime.Object by giving it DeepCopyObject.
//
// +genclient
// +genclient:noStatus
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type FlightTicket struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlightTicketSpec   `json:"spec"`
	Status FlightTicketStatus `json:"status,omitempty"`
}

// FlightTicketSpec is what the user asks for.
type FlightTicketSpec struct {
	// From is where the flight departs.
	From string `json:"from"`
	// To is where the flight arrives; it differs from From.
	To string `json:"to"`
	// Number is how many seats to book, 1 to 10.
	Number int32 `json:"number"`
}

// FlightTicketStatus is what the operator did.
type FlightTicketStatus struct {
	// Phase is Booked once the operator has booked the ticket.
	Phase string `json:"phase,omitempty"`
	// Message is a human-readable line about the booking.
	Message string `json:"message,omitempty"`
}

// PhaseBooked is Status.Phase of a booked ticket.
const PhaseBooked = "Booked"

// FlightTicketList is what a LIST of FlightTickets returns.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type FlightTicketList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []FlightTicket `json:"items"`
}

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// controller-gen reads the markers below and on the fields; together they
// must give 01's CRD schema (config/crd_test.go checks); Format="" leaves
// out the `format: int32` that 01's CRD does not have. No
// subresource:status yet: stage 06 adds it. 01's limit of 56 characters on
// metadata.name has no marker: `make manifests-05` patches it in
// (config/crd-patches/).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=operator-flow
// +kubebuilder:printcolumn:name="Prints",type=string,JSONPath=".spec.name",description="spec.name, the name in the activity line"
// +kubebuilder:printcolumn:name="Interval",type=integer,JSONPath=".spec.timeInterval",description="seconds between lines"
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=".spec.replicas"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=".status.state"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"

// Logger asks for pods that print an activity line at a fixed interval.
type Logger struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the name, namespace, labels and the rest that every
	// object has.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is what the user asks for.
	// +required
	Spec LoggerSpec `json:"spec,omitzero"`
	// status is what the operator observed.
	// +optional
	Status LoggerStatus `json:"status,omitempty"`
}

// LoggerSpec is what the user asks for.
type LoggerSpec struct {
	// name is printed in every activity line.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name,omitempty"`
	// timeInterval is the number of seconds between two lines, 1 to 3600.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:validation:Format=""
	TimeInterval int32 `json:"timeInterval,omitempty"`
	// A pointer, because 0 is a valid value that must survive the trip to
	// the API server: with a plain int32 and omitempty, 0 would be left out
	// and the CRD's default, 1, would take its place.

	// replicas is the number of pods, 0 to 10; 1 when left out.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:validation:Format=""
	// +default=1
	Replicas *int32 `json:"replicas,omitempty"`
}

// LoggerStatus is what the operator observed.
type LoggerStatus struct {
	// state is Available when at least one pod is available, else
	// Unavailable.
	// +optional
	// +kubebuilder:validation:Enum=Available;Unavailable
	State string `json:"state,omitempty"`
}

// Values of LoggerStatus.State.
const (
	StateAvailable   = "Available"
	StateUnavailable = "Unavailable"
)

// LoggerList is what a LIST of Loggers returns.
//
// +kubebuilder:object:root=true
type LoggerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Logger `json:"items"`
}

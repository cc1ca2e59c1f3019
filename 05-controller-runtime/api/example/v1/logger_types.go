package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Doc comments become the CRD's descriptions (`kubectl explain`); notes for
// the reader of the Go code are separated from them by a blank line. See
// flights/v1/flightticket_types.go for the Format="" on integers.

// LoggerSpec is what the user asks for.
type LoggerSpec struct {
	// The name printed in every activity line.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`

	// Seconds between two activity lines, from 1 to 3600.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:validation:Format=""
	TimeInterval int32 `json:"timeInterval"`

	// A pointer, so that "left out" (the API server then fills in the
	// default) and an explicit 0 are different values.

	// How many pods print the line, from 0 to 10 (default 1). The bound keeps
	// a typo such as 1000 from flooding a workshop cluster; 0 keeps the
	// Logger but stops its pods.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:validation:Format=""
	// +kubebuilder:default=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
}

// LoggerState says whether a Logger's pods are running.
// +kubebuilder:validation:Enum=Available;Unavailable
type LoggerState string

const (
	// StateAvailable: at least one replica of the Deployment is available.
	StateAvailable LoggerState = "Available"
	// StateUnavailable: none is, yet, or replicas is 0.
	StateUnavailable LoggerState = "Unavailable"
)

// LoggerStatus is written by the operator. In this stage it is an ordinary
// part of the object; stage 06 moves it to the /status subresource.
type LoggerStatus struct {
	// Available when at least one pod is available, else Unavailable.
	// +optional
	State LoggerState `json:"state,omitempty"`
}

// metadata.name is limited to 56 characters in the CRD: the Deployment is
// called logger-<name>, and 56 = 63 - len("logger-") keeps that name a DNS
// label of at most 63 characters. controller-gen has
// no marker for that, because it always writes `metadata: {type: object}`;
// `make manifests-05` adds the limit with a patch (stage.mk,
// config/crd-patches/).
//
// No +kubebuilder:subresource:status marker: that is stage 06's lesson.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=operator-flow
// +kubebuilder:printcolumn:name="Prints",type=string,JSONPath=".spec.name",description="spec.name, the name in the activity line"
// +kubebuilder:printcolumn:name="Interval",type=integer,JSONPath=".spec.timeInterval",description="seconds between lines"
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=".spec.replicas"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=".status.state"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"

// A Logger asks for pods that print an activity line at a fixed interval.
type Logger struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// What the user asks for.
	Spec LoggerSpec `json:"spec"`
	// Written by the operator.
	// +optional
	Status LoggerStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// LoggerList is a list of Loggers, as LIST and the cache return it.
type LoggerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Logger `json:"items"`
}

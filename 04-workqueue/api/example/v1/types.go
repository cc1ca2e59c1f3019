package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Logger asks for pods that print an activity line at a fixed interval.
//
// +genclient
// +genclient:noStatus
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type Logger struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LoggerSpec   `json:"spec"`
	Status LoggerStatus `json:"status,omitempty"`
}

// LoggerSpec is what the user asks for.
type LoggerSpec struct {
	// Name is printed in every activity line.
	Name string `json:"name"`
	// TimeInterval is the number of seconds between two lines, 1 to 3600.
	TimeInterval int32 `json:"timeInterval"`
	// Replicas is the number of pods, 0 to 10. A pointer, because 0 is a
	// valid value that must survive the trip to the API server: with a
	// plain int32 and omitempty, 0 would be left out and the CRD's default,
	// 1, would take its place.
	Replicas *int32 `json:"replicas,omitempty"`
}

// LoggerStatus is what the operator observed.
type LoggerStatus struct {
	// State is Available when at least one pod is available, else
	// Unavailable.
	State string `json:"state,omitempty"`
}

// Values of LoggerStatus.State.
const (
	StateAvailable   = "Available"
	StateUnavailable = "Unavailable"
)

// LoggerList is what a LIST of Loggers returns.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type LoggerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Logger `json:"items"`
}

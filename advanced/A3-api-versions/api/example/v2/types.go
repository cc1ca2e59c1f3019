package v2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// v2 is v1 (../v1/types.go) with one change: spec.interval, a duration,
// where v1 has spec.timeInterval, a number of seconds. Format=duration has
// the API server parse it as the OpenAPI duration format (kube-openapi's
// strfmt.ParseDuration: "5s", "1m30s", "500ms", also "2 minutes"), and the
// CEL rule then sees a duration. storageversion makes v2 the version the
// API server writes to etcd; objects stored before stay in the version
// they were stored in until something rewrites them (README.md, "The
// storage migration").
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=operator-flow
// +kubebuilder:printcolumn:name="Prints",type=string,JSONPath=".spec.name",description="spec.name, the name in the activity line"
// +kubebuilder:printcolumn:name="Interval",type=string,JSONPath=".spec.interval",description="time between lines"
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=".spec.replicas"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=".status.state"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Available\")].status",description="the Available condition"
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
	// interval is the time between two lines, from 100ms to 1h: a duration
	// such as "5s", "1m30s" or "500ms".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Format=duration
	// +kubebuilder:validation:XValidation:rule="self >= duration('100ms') && self <= duration('1h')",message="must be from 100ms to 1h"
	Interval string `json:"interval,omitempty"`
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
	// conditions are Available and Degraded, each with the
	// generation it was observed at.
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
	// state is Available when at least one pod is available, else
	// Unavailable: the Available condition, for the printer column.
	// +optional
	// +kubebuilder:validation:Enum=Available;Unavailable
	State string `json:"state,omitempty"`
}

// Values of LoggerStatus.State.
const (
	StateAvailable   = "Available"
	StateUnavailable = "Unavailable"
)

// The condition types of a Logger, and the reasons the operator gives.
// Reasons are part of the API: scripts may switch on them, so they are
// constants, never built from error text.
const (
	// ConditionAvailable is True when at least one replica of the
	// Logger's Deployment is available.
	ConditionAvailable = "Available"
	// ConditionDegraded is True when the operator cannot make the
	// Deployment what the Logger asks for.
	ConditionDegraded = "Degraded"

	// ReasonMinimumReplicasAvailable: Available is True.
	ReasonMinimumReplicasAvailable = "MinimumReplicasAvailable"
	// ReasonNoReplicasAvailable: Available is False, the pods are not up (yet).
	ReasonNoReplicasAvailable = "NoReplicasAvailable"
	// ReasonScaledToZero: Available is False because spec.replicas is 0.
	ReasonScaledToZero = "ScaledToZero"
	// ReasonNoDeployment: Available is False, there is no Deployment of ours.
	ReasonNoDeployment = "NoDeployment"
	// ReasonAsExpected: Degraded is False.
	ReasonAsExpected = "AsExpected"
	// ReasonCreateFailed: the API server refused to create the Deployment
	// (a ResourceQuota, an admission policy, missing permissions...).
	ReasonCreateFailed = "DeploymentCreateFailed"
	// ReasonUpdateFailed: the API server refused to repair or adopt the
	// Deployment.
	ReasonUpdateFailed = "DeploymentUpdateFailed"
	// ReasonNotOwned: a Deployment of the same name exists and belongs to
	// someone else; the operator does not take it over.
	ReasonNotOwned = "DeploymentNotOwned"
)

// LoggerList is what a LIST of Loggers returns.
//
// +kubebuilder:object:root=true
type LoggerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Logger `json:"items"`
}

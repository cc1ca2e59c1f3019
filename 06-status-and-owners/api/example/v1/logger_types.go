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

// The condition types of a Logger, and the reasons the operator gives.
// Reasons are part of the API: scripts may switch on them, so they are
// constants, never built from error text.
const (
	// ConditionAvailable is True when at least one replica of the
	// Logger's Deployment is available.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the Deployment is rolling out: not
	// every replica runs the current pod template and is available yet.
	ConditionProgressing = "Progressing"
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
	// ReasonRollingOut: Progressing is True.
	ReasonRollingOut = "RollingOut"
	// ReasonRolloutComplete: Progressing is False, every replica is updated
	// and available.
	ReasonRolloutComplete = "RolloutComplete"
	// ReasonBlocked: Progressing is False because the Logger is Degraded.
	ReasonBlocked = "Blocked"
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

// LoggerStatus is written by the operator, through the /status subresource.
type LoggerStatus struct {
	// The metadata.generation this status was written for. When it is
	// below metadata.generation, the operator has not yet acted on the
	// latest spec.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// The conditions are the status; state repeats what the Available
	// condition says, for the printer columns and for readers of stages 01
	// to 05.

	// Available when at least one pod is available, else Unavailable.
	// +optional
	State LoggerState `json:"state,omitempty"`

	// Available, Progressing and Degraded, each with the generation it was
	// observed at.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// metadata.name is limited to 56 characters in the CRD: the Deployment is
// called logger-<name>, and 56 = 63 - len("logger-") keeps that name a DNS
// label of at most 63 characters. controller-gen has
// no marker for that, because it always writes `metadata: {type: object}`;
// `make manifests-06` adds the limit with a patch (stage.mk,
// config/crd-patches/).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=operator-flow
// +kubebuilder:printcolumn:name="Prints",type=string,JSONPath=".spec.name",description="spec.name, the name in the activity line"
// +kubebuilder:printcolumn:name="Interval",type=integer,JSONPath=".spec.timeInterval",description="seconds between lines"
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=".spec.replicas"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=".status.state"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Available\")].status",description="the Available condition"
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

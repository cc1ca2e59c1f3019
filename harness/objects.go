package harness

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The custom kinds and the Deployments, addressed through the dynamic
// client: tests and the bench must fit stage 02, which has no Go types for
// the custom kinds, and any learner's copy of a stage.
var (
	TicketGVR     = schema.GroupVersionResource{Group: "flights.com", Version: "v1", Resource: "flighttickets"}
	LoggerGVR     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "loggers"}
	DeploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// NewTicket is a FlightTicket with the given spec, as a user would write it.
func NewTicket(name, from, to string, number int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flights.com/v1",
		"kind":       "FlightTicket",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"from": from, "to": to, "number": number},
	}}
}

// NewLogger is a Logger whose pods print printed every interval seconds, on
// replicas pods.
func NewLogger(name, printed string, interval, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Logger",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"name": printed, "timeInterval": interval, "replicas": replicas},
	}}
}

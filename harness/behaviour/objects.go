package behaviour

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The custom kinds, addressed through the dynamic client: the suite must fit
// stage 02, which has no Go types for them.
var (
	ticketGVR = schema.GroupVersionResource{Group: "flights.com", Version: "v1", Resource: "flighttickets"}
	loggerGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "loggers"}
)

// What docs/behaviour.md promises.
const (
	phaseBooked      = "Booked"
	stateAvailable   = "Available"
	stateUnavailable = "Unavailable"
	defaultImage     = "busybox:1.37"
	containerName    = "logger"
	loggerScript     = `while true; do echo "$(date -u +%FT%TZ) $LOGGER_NAME is active"; sleep "$TIME_INTERVAL"; done`
	runAsUser        = 65534
	// ticketFinalizer: stage 06 keeps a ticket until its seats are released.
	ticketFinalizer = "flights.com/release-seats"
)

// bookingMessage is status.message of a booked ticket.
func bookingMessage(from, to string, number int64) string {
	return fmt.Sprintf("Booked %d seat(s) from %s to %s", number, from, to)
}

// deploymentName is the name of a Logger's Deployment.
func deploymentName(logger string) string { return "logger-" + logger }

// ticket is a FlightTicket's name and spec.
type ticket struct {
	name, from, to string
	number         int64
}

func (tk ticket) object() *unstructured.Unstructured {
	return newTicket(tk.name, tk.from, tk.to, tk.number)
}

func newTicket(name, from, to string, number int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flights.com/v1",
		"kind":       "FlightTicket",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"from": from, "to": to, "number": number},
	}}
}

func newLogger(name, printed string, interval, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Logger",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"name": printed, "timeInterval": interval, "replicas": replicas},
	}}
}

// str reads a string field, "" when it is absent.
func str(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

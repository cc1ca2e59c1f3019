package behaviour

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operator-flow/operator-flow/harness"
)

// The custom kinds (harness.TicketGVR, harness.LoggerGVR).
var (
	ticketGVR = harness.TicketGVR
	loggerGVR = harness.LoggerGVR
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

var (
	newTicket = harness.NewTicket
	newLogger = harness.NewLogger
)

// str reads a string field, "" when it is absent.
func str(u *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, path...)
	return s
}

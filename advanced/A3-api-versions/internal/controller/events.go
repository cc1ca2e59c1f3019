package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// The operator's reasons are one vocabulary of short CamelCase words that
// scripts can switch on; the human part is the message. Condition reasons
// (Reason... in api/flights/v1 and api/example/v1) say why a condition has
// its status, for as long as it has it; a Degraded condition's reason names
// the write that failed. Event reasons (EventReason..., below) say what the
// operator just did, once, in an Event that `kubectl describe` lists. A
// Warning Event with reason Failed goes with every failure that sets
// Degraded, with the API server's error as its message.
const (
	EventReasonBooked  = "Booked"  // a ticket's seats are held (Normal)
	EventReasonCreated = "Created" // a Logger's Deployment was created (Normal)
	EventReasonUpdated = "Updated" // a Logger's Deployment was repaired or adopted (Normal)
	EventReasonDeleted = "Deleted" // a deleted ticket's seats were given back (Normal)
	EventReasonFailed  = "Failed"  // a write the operator needs was refused; retried with backoff (Warning)
)

// maxEventNote is the most bytes an Event's note may have: the API server
// refuses a longer one (NoteLengthLimit in Kubernetes'
// pkg/apis/core/validation/events.go), and client-go's recorder does not
// shorten it, so the Event would be lost.
const maxEventNote = 1024

// recordFailure records the Warning Event that goes with a failure, its note
// cut to maxEventNote bytes: the note quotes the API server's refusal, and
// an admission webhook's message in it can be of any length.
func recordFailure(rec recorder.EventRecorder, obj runtime.Object, action, format string, args ...any) {
	rec.Eventf(obj, nil, corev1.EventTypeWarning, EventReasonFailed, action, "%s", truncateBytes(fmt.Sprintf(format, args...), maxEventNote))
}

package controller

// The operator's reasons, in one place. A reason is a short CamelCase word
// that scripts and tools can switch on; the human part is the message.
// There are two kinds, with names that say which:
//
//   - Condition reasons (api/flights/v1 and api/example/v1, Reason...) are
//     part of the API: they say why a condition has its status, for as
//     long as it has it. A Degraded condition's reason names the write that
//     failed: HoldFailed, ReleaseFailed, DeploymentCreateFailed,
//     DeploymentUpdateFailed, DeploymentNotOwned.
//   - Event reasons (below, EventReason...) say what the operator just did,
//     once, in an Event: `kubectl describe` lists them under Events, and
//     `kubectl get events` shows them too. A Warning Event with reason
//     Failed goes with every failure that sets Degraded; its message is
//     the API server's error.
const (
	// EventReasonBooked: a ticket's seats are held (Normal).
	EventReasonBooked = "Booked"
	// EventReasonCreated: a Logger's Deployment was created (Normal).
	EventReasonCreated = "Created"
	// EventReasonUpdated: a Logger's Deployment was repaired or adopted (Normal).
	EventReasonUpdated = "Updated"
	// EventReasonDeleted: a deleted ticket's seats were given back (Normal).
	EventReasonDeleted = "Deleted"
	// EventReasonFailed: the API server refused a write the operator needs;
	// the operator retries with backoff (Warning).
	EventReasonFailed = "Failed"
)

package controller

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

package controller

// The reasons of the Events the operator records (`kubectl describe` lists
// them under Events, `kubectl get events` too). A reason is a short
// CamelCase word that tools can filter on; what happened to which object is
// in the Event's note.
const (
	// ReasonBooked: a ticket's seats are held (Normal).
	ReasonBooked = "Booked"
	// ReasonCreated: a Logger's Deployment was created (Normal).
	ReasonCreated = "Created"
	// ReasonUpdated: a Logger's Deployment was repaired or adopted (Normal).
	ReasonUpdated = "Updated"
	// ReasonDeleted: a deleted ticket's seats were given back (Normal).
	ReasonDeleted = "Deleted"
	// ReasonFailed: the API server refused a write the operator needs; the
	// operator retries with backoff (Warning).
	ReasonFailed = "Failed"
)

// Package behaviour is the e2e suite that every operator stage (02 to 06)
// runs: the behaviour of docs/behaviour.md, checked against a real API server.
// A stage's e2e package calls it from one test:
//
//	func TestBehaviour(t *testing.T) {
//		behaviour.Run(t, behaviour.Stage{Package: "./03-informer-cache", RepairsDrift: true, CachedReads: true})
//	}
//
// Capabilities that only some stages have are switched on by Stage's fields,
// so that one suite describes the whole course, and a stage that lacks a
// capability says so in one visible place.
package behaviour

// Stage describes the operator under test.
type Stage struct {
	// Package is the stage's Go package, relative to the repository root,
	// e.g. "./02-raw-watch". OPERATOR_PKG overrides it (harness.OperatorPackage),
	// so a lab can point the suite at a learner's copy.
	Package string
	// Args are extra flags for the operator, after --kubeconfig and --namespace.
	Args []string
	// RepairsDrift: a Deployment scaled or deleted behind the operator's back
	// is put back without any change to the Logger (stages 03 to 06).
	RepairsDrift bool
	// CachedReads: the operator reads the objects it acts on from a local
	// cache (an informer), so a pass over converged objects sends no GET
	// (stages 03 to 06). Stage 02 GETs what it needs for every event.
	CachedReads bool
	// Retries: a write that failed is retried with backoff until it succeeds
	// (stages 04 to 06).
	Retries bool
	// GarbageCollected: a Logger's Deployment carries an owner reference and
	// is removed by the garbage collector, even while the operator is stopped
	// (stage 06).
	GarbageCollected bool
	// TicketFinalizer: FlightTickets carry a finalizer, so a deleted ticket
	// stays until an operator has run it (stage 06). Every check then
	// deletes its tickets with an operator running before its namespace is
	// deleted, which could otherwise never finish (ReleaseTicketsAtCleanup).
	TicketFinalizer bool
	// StaleWritesConflict: the operator's write of a Logger's status carries
	// the resourceVersion it read, so a write from a stale copy is answered
	// 409 Conflict, and must be sent again: an Update of the whole object in
	// stages 04 and 05, where the status is part of the object, and a merge
	// patch of /status with the resourceVersion in stage 06.
	StaleWritesConflict bool
	// Conditions: the operator reports status conditions (stage 06): a
	// Logger whose Deployment the API server keeps refusing is Degraded.
	Conditions bool
	// NothingForbidden: the operator runs with only the roles it needs
	// (TestLeastPrivilege), so a request refused with 403 Forbidden means a
	// missing rule. Every operator the suite starts must then log no
	// "forbidden".
	NothingForbidden bool
}

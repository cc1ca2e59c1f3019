// Package admission holds the one rule that both day-two admission modules
// enforce, as a table: advanced/A1-admission-policies enforces it with a
// ValidatingAdmissionPolicy and a MutatingAdmissionPolicy, which the API
// server runs itself; advanced/A2-admission-webhook enforces it with a
// validating and a defaulting webhook, which the operator serves. Both
// modules' e2e tests run every case, and A2's parity test runs each case
// through both in one go and compares the verdicts.
//
// The rule:
//
//   - Validation. A namespace may cap the replicas of its Loggers with the
//     label example.com/max-logger-replicas (a whole number). A create over
//     the cap is refused; so is an update that raises replicas over it. An
//     update that does not raise replicas passes, so that a Logger stored
//     before the cap was lowered can still be edited. A cap that is not a
//     whole number refuses every write, with a message that says so.
//   - Defaulting. A Logger created or updated without the label
//     example.com/team gets its namespace's example.com/team label, when the
//     namespace has one.
package admission

// The labels the rule reads and writes.
const (
	// MaxReplicasLabel, on a Namespace, caps its Loggers' spec.replicas.
	MaxReplicasLabel = "example.com/max-logger-replicas"
	// TeamLabel, on a Namespace, is copied to its Loggers that have none.
	TeamLabel = "example.com/team"
)

// Case is one write of a Logger, and what admission must make of it.
type Case struct {
	// Name says what the case shows.
	Name string
	// NamespaceLabels are the labels of the Logger's namespace.
	NamespaceLabels map[string]string
	// OldReplicas is the stored Logger's spec.replicas for an update; nil
	// makes the case a create.
	OldReplicas *int32
	// Replicas is the written Logger's spec.replicas.
	Replicas int32
	// Labels are the written Logger's labels.
	Labels map[string]string

	// Allowed is the verdict.
	Allowed bool
	// Says are parts of the refusal's message (when not Allowed). A
	// policy and a webhook word their refusals differently; both must
	// name the field and the cap.
	Says []string
	// Team is the example.com/team label the stored Logger carries after
	// admission ("" for none).
	Team string
}

func replicas(n int32) *int32 { return &n }

// Cases is the table.
var Cases = []Case{
	{Name: "no cap: any replicas pass", Replicas: 10, Allowed: true},
	{Name: "at the cap passes",
		NamespaceLabels: map[string]string{MaxReplicasLabel: "3"}, Replicas: 3, Allowed: true},
	{Name: "over the cap is refused, naming spec.replicas and the cap",
		NamespaceLabels: map[string]string{MaxReplicasLabel: "3"}, Replicas: 4,
		Says: []string{"spec.replicas", "4", "cap of 3"}},
	{Name: "an update that raises replicas over the cap is refused",
		NamespaceLabels: map[string]string{MaxReplicasLabel: "3"}, OldReplicas: replicas(2), Replicas: 5,
		Says: []string{"spec.replicas", "5", "cap of 3"}},
	{Name: "an update that keeps replicas over a lowered cap passes",
		NamespaceLabels: map[string]string{MaxReplicasLabel: "3"}, OldReplicas: replicas(6), Replicas: 6, Allowed: true},
	{Name: "an update that lowers replicas, still over the cap, passes",
		NamespaceLabels: map[string]string{MaxReplicasLabel: "3"}, OldReplicas: replicas(6), Replicas: 5, Allowed: true},
	{Name: "a cap that is not a whole number refuses the write, saying why",
		NamespaceLabels: map[string]string{MaxReplicasLabel: "three"}, Replicas: 1,
		Says: []string{MaxReplicasLabel, "whole number"}},
	{Name: "so does a cap that only starts with one",
		NamespaceLabels: map[string]string{MaxReplicasLabel: "3x"}, Replicas: 1,
		Says: []string{MaxReplicasLabel, "whole number"}},
	{Name: "the namespace's team is copied to a Logger without one",
		NamespaceLabels: map[string]string{TeamLabel: "payments"}, Replicas: 1, Allowed: true, Team: "payments"},
	{Name: "a Logger's own team is kept",
		NamespaceLabels: map[string]string{TeamLabel: "payments"}, Replicas: 1,
		Labels: map[string]string{TeamLabel: "search"}, Allowed: true, Team: "search"},
	{Name: "no team anywhere: none is set", Replicas: 1, Allowed: true},
}

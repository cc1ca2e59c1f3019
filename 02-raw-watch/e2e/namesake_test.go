package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// TestWeaknessNamesakeTakenOver: someone else's Deployment logger-audit,
// without the managed-by label, and a Logger audit. Stage 02 GETs
// logger-<name> by name and checks no label: creating the Logger
// merge-patches the Logger's replicas and pod template into the team's
// Deployment (same UID), and deleting the Logger deletes it, by name, with
// no UID precondition.
func TestWeaknessNamesakeTakenOver(t *testing.T) {
	behaviour.Namesake(t, stage, behaviour.NamesakeOutcome{Rewritten: true, DeletedWithLogger: true})
}

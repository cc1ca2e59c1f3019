package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// TestWeaknessNamesakeDeletedWithLogger: someone else's Deployment
// logger-audit, without the managed-by label, and a Logger audit. Creating
// the Logger leaves the Deployment alone: the label-filtered cache never
// holds it, the create is answered AlreadyExists, and the handler gives up
// (stage 02 took it over). But deleting the Logger deletes it: the delete
// handler deletes logger-<name> by name, with no label check and no UID
// precondition. Stage 04 looks in its cache first, so it never deletes it.
func TestWeaknessNamesakeDeletedWithLogger(t *testing.T) {
	behaviour.Namesake(t, stage, behaviour.NamesakeOutcome{DeletedWithLogger: true})
}

package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// TestWeaknessLabelStripped: the managed-by label removed from a Logger's
// Deployment takes it out of the operator's cache. The create that follows
// is answered AlreadyExists and given up, so a change of the Logger's
// replicas never reaches the Deployment and the Logger's status stays as it
// was. Deleting the Logger still deletes it (by name, as for someone else's
// Deployment: TestWeaknessNamesakeDeletedWithLogger). Stage 06 fixes it.
func TestWeaknessLabelStripped(t *testing.T) {
	behaviour.LabelStripped(t, stage, true)
}

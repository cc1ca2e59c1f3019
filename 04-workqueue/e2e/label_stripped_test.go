package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// TestWeaknessLabelStripped: the managed-by label removed from a Logger's
// Deployment takes it out of the operator's cache. The create that follows
// is answered AlreadyExists and returned as success ("its event will
// follow", but none does), so a change of the Logger's replicas never
// reaches the Deployment and the Logger's status stays as it was. Deleting
// the Logger looks for the Deployment in the cache, finds none, and leaves
// it running: an orphan. Stage 06 fixes it.
func TestWeaknessLabelStripped(t *testing.T) {
	behaviour.LabelStripped(t, stage, false)
}

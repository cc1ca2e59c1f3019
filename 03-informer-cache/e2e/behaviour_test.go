package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// stage describes stage 03 to the shared suite. New since 02: the Deployment
// informer repairs drift, and listers read from the cache, so a pass over
// converged objects sends no GET.
var stage = behaviour.Stage{Package: pkg, RepairsDrift: true, CachedReads: true}

// TestBehaviour runs docs/behaviour.md against stage 03.
func TestBehaviour(t *testing.T) {
	behaviour.Run(t, stage)
}

package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// stage describes stage 02 to the shared suite. Every capability flag is
// off: no cache, no drift repair, no retry, no status subresource, no
// garbage collection.
var stage = behaviour.Stage{Package: pkg}

// TestBehaviour runs docs/behaviour.md against stage 02.
func TestBehaviour(t *testing.T) {
	behaviour.Run(t, stage)
}

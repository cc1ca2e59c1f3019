package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// TestBehaviour runs docs/behaviour.md against stage 02. Every capability
// flag is off: no cache, no drift repair, no retry, no status subresource,
// no garbage collection.
func TestBehaviour(t *testing.T) {
	behaviour.Run(t, behaviour.Stage{Package: pkg})
}

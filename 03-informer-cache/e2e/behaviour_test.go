package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// TestBehaviour runs docs/behaviour.md against stage 03. New since 02: the
// Deployment informer repairs drift, and listers read from the cache, so a
// pass over converged objects sends no GET.
func TestBehaviour(t *testing.T) {
	behaviour.Run(t, behaviour.Stage{Package: pkg, RepairsDrift: true, CachedReads: true})
}

// Package e2e traces a fixed Logger and a fixed FlightTicket through each
// stage's operator on a real cluster, asserts the shape of each trace (the
// hops that must be there, in their order, and those that must not), and
// checks each lab's hand-drawn sequence diagram against them.
package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness"
)

// Each stage's CRDs are installed by its own test (crdsOf): 05 and 06
// generate theirs, and 06's has the status subresource.
func TestMain(m *testing.M) { harness.Main(m) }

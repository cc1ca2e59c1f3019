// Package e2e checks stage 02 against a real API server: the shared
// behaviour suite (harness/behaviour), the watch resuming after the API
// server ends it, and the weaknesses the README lists, each asserted as the
// behaviour it is.
package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness"
)

// pkg is the operator under test; OPERATOR_PKG points the tests at another
// copy, such as a learner's.
var pkg = harness.OperatorPackage("./02-raw-watch")

func TestMain(m *testing.M) { harness.Main(m, "01-crd-yaml/crds") }

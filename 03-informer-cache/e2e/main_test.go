// Package e2e checks stage 03 against a real API server: the shared
// behaviour suite (harness/behaviour), with drift repair and reads from the
// cache, and the weaknesses the README lists, each asserted as the
// behaviour it is.
package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness"
)

// pkg is the operator under test; OPERATOR_PKG points the tests at another
// copy, such as a learner's.
var pkg = harness.OperatorPackage("./03-informer-cache")

func TestMain(m *testing.M) { harness.Main(m, "01-crd-yaml/crds") }

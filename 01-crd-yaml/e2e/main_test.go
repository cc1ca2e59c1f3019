// Package e2e checks stage 01 against a real API server: the hand-written
// CRDs install, accept every sample, reject every file in invalid/ with an
// error that names the field, support server-side dry-run, and print the
// documented columns.
package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness"
)

func TestMain(m *testing.M) { harness.Main(m, "01-crd-yaml/crds") }

// Package harness is the shared part of every stage's e2e tests.
//
// It does four things and nothing more:
//
//   - Main gives a stage's TestMain a cluster: the one named by E2E_KUBECONFIG
//     (that is how `make test` shares one cluster between all stages), or else
//     a fresh kwok cluster (kind with CLUSTER=kind) created through
//     e2e-framework's providers from the binaries in ./bin, and deleted again
//     when the tests end. It then installs the stage's CRDs.
//   - Clients, Apply and Namespace talk to that cluster.
//   - Eventually waits for a condition by polling with a deadline; no test
//     here sleeps for a fixed time. It gives up at once when an operator that
//     the test, or a test it runs within, started has crashed
//     (Operator.Crash), naming the panic or the exit.
//   - BuildOperator and StartOperator build an operator from a Go package path
//     and run it as a process whose logs the test can read. The package path
//     can be overridden with OPERATOR_PKG, so that a lab can run a stage's
//     tests against a learner's copy.
//
// KUBECONFIG is ignored on purpose: tests create namespaces and CRDs, and must
// never do so on whatever cluster a shell happens to point at.
package harness

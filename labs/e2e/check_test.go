// Package e2e proves that `make check-N` tells right from wrong: stage N's
// own operator must pass it, and stage N-1's (what a learner starts the
// exercise from) must fail it, in words a learner understands.
//
// Each case runs only the tests of the concept stage N adds (CHECK_RUN), so
// that the proof costs a minute, not a whole suite per stage.
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/operator-flow/operator-flow/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

var cases = []struct {
	stage       int
	before, now string // the package a learner starts from, and the reference
	run         string // the concept's tests, as a go test -run pattern
}{
	{3, "./02-raw-watch", "./03-informer-cache", "TestBehaviour/drift"},
	{4, "./03-informer-cache", "./04-workqueue", "TestRetry"},
	{6, "./05-controller-runtime", "./06-status-and-owners", "TestBehaviour"},
}

func TestCheckTellsRightFromWrong(t *testing.T) {
	kubeconfig := harness.Env().EnvConf().KubeconfigFile()
	for _, c := range cases {
		t.Run(fmt.Sprintf("check-%d", c.stage), func(t *testing.T) {
			// Stage N-1 must fail: each of its failing waits is cut from a
			// minute to 15 s, which changes no verdict.
			out, err := check(t, c.stage, c.before, c.run, kubeconfig, "E2E_CONVERGE=15s")
			if err == nil || !strings.Contains(out, "Not there yet") || !strings.Contains(out, "FAIL  ") {
				t.Errorf("check-%d on %s (stage %d's starting point) must report failures; it said (err=%v):\n%s", c.stage, c.before, c.stage-1, err, out)
			}
			out, err = check(t, c.stage, c.now, c.run, kubeconfig)
			if err != nil || !strings.Contains(out, "works: well done") {
				t.Errorf("check-%d on %s (the reference) must pass; it said (err=%v):\n%s", c.stage, c.now, err, out)
			}
		})
	}
}

// check runs what `make check-N` runs, with the operator package and the
// tests to run given, and env added to the environment.
func check(t *testing.T, stage int, pkg, run, kubeconfig string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", "run", "./labs/check", fmt.Sprint(stage))
	cmd.Dir = harness.RepoPath()
	cmd.Env = append(append(os.Environ(), "OPERATOR_PKG="+pkg, "CHECK_RUN="+run, "E2E_KUBECONFIG="+kubeconfig), env...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	t.Logf("check-%d with %s:\n%s", stage, pkg, lastLines(b.String(), 12))
	return b.String(), err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

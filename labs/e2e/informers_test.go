package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/operator-flow/operator-flow/harness"
)

// TestSharedInformersSaveWatchesAndCopies runs the demo of
// docs/shared-informers.md (labs/informers) in both modes and checks the
// numbers it shows: two controllers with
// an informer each hold two WATCHes and two copies of every ticket; with one
// shared factory, one and one.
func TestSharedInformersSaveWatchesAndCopies(t *testing.T) {
	const tickets = 200
	c, err := harness.NewClients(harness.Env().EnvConf().Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	// The demo uses stage 03's typed client, on lab 3's CRDs.
	if err := c.InstallCRDs(context.Background(), harness.RepoPath("01-crd-yaml", "crds")); err != nil {
		t.Fatal(err)
	}
	ns := c.Namespace(t, "informers")
	kubeconfig := harness.Env().EnvConf().KubeconfigFile()
	line := regexp.MustCompile(`(\d+) informers?, (\d+) WATCH connections?, (\d+) tickets cached`)
	for _, tc := range []struct {
		mode                       string
		informers, watches, cached int
	}{
		{"plain", 2, 2, 2 * tickets},
		{"shared", 1, 1, tickets},
	} {
		cmd := exec.Command("go", "run", "./labs/informers", "--kubeconfig", kubeconfig, "--namespace", ns,
			"--tickets", strconv.Itoa(tickets), "--mode", tc.mode)
		cmd.Dir = harness.RepoPath()
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("labs/informers --mode %s: %v\n%s%s", tc.mode, err, out.String(), errOut.String())
		}
		t.Logf("%s", out.String())
		m := line.FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("labs/informers --mode %s printed no result line:\n%s", tc.mode, out.String())
		}
		got := [3]int{}
		for i := range got {
			got[i], _ = strconv.Atoi(m[i+1])
		}
		if want := [3]int{tc.informers, tc.watches, tc.cached}; got != want {
			t.Errorf("--mode %s: %d informers, %d WATCH connections, %d tickets cached; want %v", tc.mode, got[0], got[1], got[2], want)
		}
	}
}

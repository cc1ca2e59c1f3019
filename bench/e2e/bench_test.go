// Package e2e runs a small `make bench` (20 tickets, 2 Loggers) on every
// operator stage, so that the benchmark harness cannot rot, and checks the
// targets that do not depend on the machine's speed: an idle pass over
// converged objects costs stages 03 and later no write and no GET, by the
// operator's own count and by the objects' resourceVersions; and the API
// server counts at least the writes the bench and the operator sent.
package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-flow/operator-flow/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

type results struct {
	Tickets, Loggers int
	Stages           []struct {
		Stage                                    string
		IdleWrites, IdleChanged                  int
		Gets                                     int
		Writes                                   int
		Bound                                    int
		CreateServerWrites, CreateOperatorWrites int
	}
}

func TestSmallBench(t *testing.T) {
	cfg := harness.Env().EnvConf()
	var stages []string
	for n := 2; n <= 6; n++ {
		matches, _ := filepath.Glob(harness.RepoPath(fmt.Sprintf("%02d-*", n)))
		if len(matches) == 0 {
			continue
		}
		if _, err := os.Stat(filepath.Join(matches[0], "main.go")); err == nil {
			stages = append(stages, fmt.Sprint(n))
		}
	}
	if len(stages) == 0 {
		t.Fatal("no operator stage to measure")
	}
	out := t.TempDir()
	cmd := exec.Command("go", "run", "./bench", "--kubeconfig", cfg.KubeconfigFile(),
		"--tickets", "20", "--loggers", "2", "--stages", strings.Join(stages, ","), "--out", out)
	cmd.Dir = harness.RepoPath()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the bench failed: %v\n%s\n%s", err, stderr.String(), stdout.String())
	}
	t.Logf("bench output:\n%s", stdout.String())

	b, err := os.ReadFile(filepath.Join(out, "latest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Stages) != len(stages) {
		t.Fatalf("results for %d stages, want %d", len(r.Stages), len(stages))
	}
	for _, s := range r.Stages {
		if !strings.Contains(stdout.String(), "| "+s.Stage+" |") {
			t.Errorf("the table has no row for %s", s.Stage)
		}
		// The API server's count is independent of the operator's own: it
		// must hold at least the bench's creates and the operator's writes.
		if least := r.Tickets + r.Loggers + s.CreateOperatorWrites; s.CreateServerWrites < least {
			t.Errorf("%s: the API server counted %d writes in the create phase, fewer than the bench's %d creates + the operator's %d writes: the server's count is wrong", s.Stage, s.CreateServerWrites, r.Tickets+r.Loggers, s.CreateOperatorWrites)
		}
		if s.Writes < s.Bound {
			t.Errorf("%s: %d writes, fewer than the lower bound %d: the bound or the count is wrong", s.Stage, s.Writes, s.Bound)
		}
		if s.Stage >= "03" {
			if s.IdleWrites != 0 {
				t.Errorf("%s: an idle pass over converged objects wrote %d times, want 0", s.Stage, s.IdleWrites)
			}
			// The same, seen from the API server: no object changed.
			if s.IdleChanged != 0 {
				t.Errorf("%s: %d objects got a new resourceVersion during the idle pass, want 0", s.Stage, s.IdleChanged)
			}
			// Stage 06 reads a Logger past the cache once before it makes
			// the Logger's Deployment (a Logger deleted from the API server
			// but not yet from the cache gets none): one GET per Logger.
			gets := 0
			if s.Stage >= "06" {
				gets = r.Loggers
			}
			if s.Gets > gets {
				t.Errorf("%s: %d GETs, want at most %d for a stage that reads from a cache", s.Stage, s.Gets, gets)
			}
		}
	}
	png, err := os.ReadFile(filepath.Join(out, "latest.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("no PNG chart written (%v)", err)
	}
}

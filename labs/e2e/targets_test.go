package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/operator-flow/operator-flow/harness"
)

// labCluster is the CLUSTER_NAME the lab targets run with here: a cluster of
// their own, so that lab operators, which watch every namespace, never see
// the other tests' objects, and the workshop cluster of whoever runs the
// tests is left alone.
const labCluster = "labs-e2e"

// TestLabTargets runs the targets the labs tell a learner to type, the way
// they type them (make, from the repository root), so that the labs cannot
// drift from what the targets do:
//
//   - make lab-N, in an order that is not 1 to 6, each replacing the
//     previous lab's operator and CRDs (06's have the status subresource,
//     02's do not) and working on the objects the previous lab left;
//   - make lab-stop;
//   - make diff-N for every stage;
//   - make exercise-N for every stage with an exercise, which must write
//     stage N with its concept's functions cut out into workspace/, and
//     touch no stage folder.
func TestLabTargets(t *testing.T) {
	t.Cleanup(func() { labClusterDown(t, labCluster) })

	t.Run("make lab-N in any order", func(t *testing.T) {
		for _, n := range []int{3, 1, 6, 2, 5, 4} {
			out, err := makeTarget(t, labCluster, fmt.Sprintf("lab-%d", n))
			if err != nil {
				t.Fatalf("make lab-%d failed: %v\n%s", n, err, lastLines(out, 30))
			}
			checkLab(t, n, out)
		}
	})

	// The trace's shape on every stage is trace/e2e's business; here the
	// target itself, as the labs tell a learner to type it.
	t.Run("make trace-N follows one object through stage N", func(t *testing.T) {
		out, err := makeTarget(t, labCluster, "trace-2")
		if err != nil {
			t.Fatalf("make trace-2: %v\n%s", err, lastLines(out, 20))
		}
		if !strings.Contains(out, "loggers/lab/audit on stage 02-raw-watch") || !lineWith(out, "sync (the same loop)", "GET loggers audit → 200") {
			t.Errorf("make trace-2 does not show stage 02's sync GETting the Logger audit:\n%s", lastLines(out, 30))
		}
		t.Setenv("DELETE", "1")
		out, err = makeTarget(t, labCluster, "trace-6")
		if err != nil {
			t.Fatalf("make trace-6 DELETE=1: %v\n%s", err, lastLines(out, 20))
		}
		if !lineWith(out, "Reconcile", "PATCH loggers/status audit") || !lineWith(out, "garbage collector", "DELETE deployments logger-audit") {
			t.Errorf("make trace-6 DELETE=1 does not show the status written through /status and the garbage collector deleting the Deployment:\n%s", lastLines(out, 30))
		}
		md, err := os.ReadFile(harness.RepoPath(".state", "trace", "trace-6-"+labCluster+".md"))
		if err != nil || !bytes.Contains(md, []byte("sequenceDiagram")) || !bytes.Contains(md, []byte("participant G as garbage collector")) {
			t.Errorf("make trace-6 wrote no Mermaid diagram with the garbage collector in it (%v):\n%s", err, md)
		}
	})

	t.Run("make lab-stop stops the lab operator", func(t *testing.T) {
		pid := labOperatorPID(t)
		if pid == 0 {
			t.Fatal("no lab operator is running after make lab-4")
		}
		if out, err := makeTarget(t, labCluster, "lab-stop"); err != nil {
			t.Fatalf("make lab-stop: %v\n%s", err, out)
		}
		// lab.sh waits for the process to end before it returns.
		if processRunning(pid) {
			t.Errorf("the lab operator (pid %d) still runs after make lab-stop", pid)
		}
		if out, err := makeTarget(t, labCluster, "lab-stop"); err != nil {
			t.Errorf("a second make lab-stop must do nothing, quietly: %v\n%s", err, out)
		}
	})

	t.Run("make diff-N shows hand-written changes only", func(t *testing.T) {
		for n := 2; n <= 6; n++ {
			out, err := makeTarget(t, labCluster, fmt.Sprintf("diff-%d", n))
			if err != nil {
				t.Errorf("make diff-%d: %v\n%s", n, err, lastLines(out, 10))
				continue
			}
			if !strings.Contains(out, "diff --git") {
				t.Errorf("make diff-%d shows no change:\n%s", n, lastLines(out, 10))
			}
			for _, generated := range []string{"zz_generated", "/generated/", "go.sum", "config/crd/", "rbac/role.yaml"} {
				for _, line := range strings.Split(out, "\n") {
					if strings.HasPrefix(line, "diff --git") && strings.Contains(line, generated) {
						t.Errorf("make diff-%d shows generated code: %s", n, line)
					}
				}
			}
		}
	})

	t.Run("make exercise-N writes stage N without its concept, and nothing else", func(t *testing.T) {
		for n := 2; n <= 6; n++ {
			exercise(t, n, stageDir(t, n))
		}
	})
}

// checkLab checks what make lab-N printed and left running.
func checkLab(t *testing.T, n int, out string) {
	t.Helper()
	dir := stageDir(t, n)
	if !strings.Contains(out, fmt.Sprintf("read on: labs/%02d-", n)) {
		t.Errorf("make lab-%d does not say which lab to read on:\n%s", n, lastLines(out, 10))
	}
	pid := labOperatorPID(t)
	if n == 1 {
		// Stage 01 has no operator: its CRDs go in and the samples are
		// stored. (Labs build on each other: a status an earlier lab's
		// operator wrote stays, as lab 1's troubleshooting says.)
		if pid != 0 {
			t.Errorf("make lab-1 left a lab operator running (pid %d); stage 01 has none", pid)
		}
		if !strings.Contains(out, "installing CRDs from 01-crd-yaml/crds") || !lineWith(out, "amsterdam-lisbon", "Amsterdam", "Lisbon") {
			t.Errorf("make lab-1 did not install 01's CRDs and show the samples:\n%s", lastLines(out, 12))
		}
		return
	}
	if pid == 0 {
		t.Fatalf("make lab-%d left no lab operator running", n)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if want := "operator-" + dir[:2]; !bytes.Contains(cmdline, []byte(want)) {
		t.Errorf("the lab operator after make lab-%d is %q, want stage %s's", n, strings.ReplaceAll(string(cmdline), "\x00", " "), dir)
	}
	// Every sample ticket booked, and the Logger's Deployment listed.
	for _, ticket := range []string{"amsterdam-lisbon", "paris-rome"} {
		if !lineWith(out, ticket, "Booked") {
			t.Errorf("make lab-%d did not show ticket %s Booked:\n%s", n, ticket, lastLines(out, 14))
		}
	}
	// An earlier lab's operator may have booked the samples already, so
	// "Booked" alone proves nothing about this one: its own log must show
	// that it looked at them ("booked" or "in sync"). make lab-N returns
	// as soon as the samples show Booked, which they may have shown before
	// this operator started, so its log is polled for that line.
	logFile := harness.RepoPath(".state", "logs", fmt.Sprintf("lab-%s-%s.log", dir[:2], labCluster))
	harness.Eventually(t, 30*time.Second, fmt.Sprintf("the stage %s lab operator's log to show it booking ticket amsterdam-lisbon or finding it in sync", dir), func(context.Context) (bool, string, error) {
		log, _ := os.ReadFile(logFile)
		found := lineWith(string(log), "amsterdam-lisbon", "booked") || lineWith(string(log), "amsterdam-lisbon", "in sync")
		return found, "the log ends:\n" + lastLines(string(log), 14), nil
	})
	if !strings.Contains(out, "logger-heartbeat") {
		t.Errorf("make lab-%d did not show the Logger's Deployment:\n%s", n, lastLines(out, 14))
	}
	if n >= 5 {
		// The Manager's endpoints: /metrics on 8443, the probes on 8081.
		checkLoopbackOnly(t, n, pid, 8443, 8081)
	}
}

// exercise runs make exercise-N. On a clean clone workspace/<stage> does not
// exist: the copy must appear, with the concept's functions cut out (each a
// TODO that panics), build, and leave every stage folder as it was; it is
// removed again afterwards. Where a learner already works on that exercise,
// the target must refuse and keep their copy.
func exercise(t *testing.T, n int, stage string) {
	t.Helper()
	dest := harness.RepoPath("workspace", stage)
	if _, err := os.Stat(dest); err == nil {
		out, err := makeTarget(t, labCluster, fmt.Sprintf("exercise-%d", n))
		if err == nil || !strings.Contains(out, "already exists") {
			t.Errorf("make exercise-%d with workspace/%s present must refuse and keep it; it said (err=%v):\n%s", n, stage, err, out)
		}
		return
	}
	before := stageStatus(t)
	t.Cleanup(func() {
		_ = os.RemoveAll(dest)
		_ = os.Remove(harness.RepoPath("workspace")) // only when empty
	})
	out, err := makeTarget(t, labCluster, fmt.Sprintf("exercise-%d", n))
	if err != nil {
		t.Fatalf("make exercise-%d: %v\n%s", n, err, out)
	}
	if !strings.Contains(out, "workspace/"+stage+": stage ") || !strings.Contains(out, fmt.Sprintf("labs/%02d-", n)) {
		t.Errorf("make exercise-%d did not say what it wrote and which lab to read:\n%s", n, out)
	}
	if _, err := os.Stat(filepath.Join(dest, "main.go")); err != nil {
		t.Errorf("workspace/%s has no main.go: %v", stage, err)
	}
	if _, err := os.Stat(filepath.Join(dest, "e2e")); err == nil {
		t.Errorf("workspace/%s has an e2e folder; the checks are stage %s's own", stage, stage)
	}
	todo := fmt.Sprintf("panic(\"TODO(lab %d): write ", n)
	grep := exec.Command("grep", "-rlF", todo, dest)
	if b, _ := grep.Output(); len(b) == 0 {
		t.Errorf("workspace/%s has no function to write (no %s...)", stage, todo)
	}
	// The build hint that exercise.sh prints must work as printed.
	hint := ""
	for _, line := range strings.Split(out, "\n") {
		if _, h, ok := strings.Cut(line, ">> build it:"); ok {
			hint = strings.TrimSpace(h)
		}
	}
	if !strings.HasPrefix(hint, "go build ") {
		t.Errorf("make exercise-%d prints no build hint:\n%s", n, out)
	} else {
		build := exec.Command("sh", "-c", hint)
		build.Dir = harness.RepoPath()
		if b, err := build.CombinedOutput(); err != nil {
			t.Errorf("the copy does not build with the printed hint (%s): %v\n%s", hint, err, b)
		}
	}
	if after := stageStatus(t); after != before {
		t.Errorf("make exercise-%d changed the stage folders:\nbefore:\n%s\nafter:\n%s", n, before, after)
	}
}

// labClusterDown stops the lab operator that the targets started on cluster,
// then the cluster: whoever starts a cluster stops it, even when a check
// failed.
func labClusterDown(t *testing.T, cluster string) {
	t.Helper()
	if out, err := makeTarget(t, cluster, "lab-stop"); err != nil {
		t.Errorf("make lab-stop at cleanup: %v\n%s", err, out)
	}
	if out, err := makeTarget(t, cluster, "cluster-down"); err != nil {
		t.Errorf("make cluster-down: %v\n%s", err, out)
	}
}

// clusterEnv is the environment that points the make targets at cluster.
func clusterEnv(cluster string) []string {
	return append(os.Environ(), "CLUSTER_NAME="+cluster, "CLUSTER=kwok")
}

// makeTarget runs make TARGET from the repository root with the given
// cluster's name, and returns what it printed.
func makeTarget(t *testing.T, cluster, target string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", target)
	cmd.Dir = harness.RepoPath()
	cmd.Env = clusterEnv(cluster)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	start := time.Now()
	err := cmd.Run()
	t.Logf("make %s: %s, %v", target, time.Since(start).Round(100*time.Millisecond), err)
	return b.String(), err
}

// labOperatorPID is the pid in the lab's pid file when that process still
// runs, else 0.
func labOperatorPID(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(harness.RepoPath(".state", "lab-operator-"+labCluster+".pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !processRunning(pid) {
		return 0
	}
	return pid
}

func processRunning(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// stageDir is the folder of stage n, e.g. 04-workqueue.
func stageDir(t *testing.T, n int) string {
	t.Helper()
	m, _ := filepath.Glob(harness.RepoPath(fmt.Sprintf("%02d-*", n)))
	if len(m) != 1 {
		t.Fatalf("stage %d: folders %v", n, m)
	}
	return filepath.Base(m[0])
}

// stageStatus is git's view of the stage folders: what is modified or new.
func stageStatus(t *testing.T) string {
	t.Helper()
	m, _ := filepath.Glob(harness.RepoPath("0[1-6]-*"))
	args := []string{"status", "--porcelain", "--"}
	for _, d := range m {
		args = append(args, filepath.Base(d))
	}
	cmd := exec.Command("git", args...)
	cmd.Dir = harness.RepoPath()
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git status: %v\n%s", err, b)
	}
	return string(b)
}

// lineWith reports whether one line of s contains every part.
func lineWith(s string, parts ...string) bool {
	for _, line := range strings.Split(s, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			return true
		}
	}
	return false
}

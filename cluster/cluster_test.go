// Package cluster holds the scripts that start and stop the workshop cluster.
// These tests drive the kind path of cluster.sh with stand-in `docker` and
// `kind` commands, since no Docker engine runs on the machines that test this
// repository.
package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBin writes executable shell scripts into a temporary folder and returns
// a PATH that finds them first.
func fakeBin(t *testing.T, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

func runScript(t *testing.T, path string, env []string, args ...string) (string, error, time.Duration) {
	t.Helper()
	cmd := exec.Command("./cluster.sh", args...)
	cmd.Env = append(os.Environ(), append([]string{"PATH=" + path}, env...)...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	return string(out), err, time.Since(start)
}

func TestKindFailsFastWithoutDocker(t *testing.T) {
	path := fakeBin(t, map[string]string{
		// What `docker info` says when the client is installed but no engine runs.
		"docker": "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2; exit 1\n",
	})
	out, err, took := runScript(t, path, []string{"CLUSTER=kind", "CLUSTER_NAME=fake-kind-" + t.Name()}, "up")
	if err == nil {
		t.Fatalf("cluster.sh up with CLUSTER=kind and no Docker engine succeeded:\n%s", out)
	}
	if !strings.Contains(out, "needs a running Docker engine") || !strings.Contains(out, "make cluster") {
		t.Errorf("the message does not say what is wrong and what to do instead:\n%s", out)
	}
	if took > 15*time.Second {
		t.Errorf("took %s to fail; it must fail within seconds", took)
	}
}

// TestKindPathCommands runs `up` twice and `down` once with CLUSTER=kind,
// against a stand-in docker (an engine that answers) and a stand-in kind that
// records its arguments, and checks what kind was asked to do.
func TestKindPathCommands(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "kind-calls")
	path := fakeBin(t, map[string]string{
		"docker": "echo 28.2.2\n",
		// `kind get clusters` lists the cluster once `create` has run,
		// and a moment later one more: whoever reads the list must read it
		// to the end, or the lister dies of SIGPIPE and, with pipefail,
		// the cluster counts as missing (and is created again).
		"kind": `echo "$*" >>"$KIND_CALLS"
case "$1 $2" in
"get clusters") grep -q '^create cluster' "$KIND_CALLS" && { echo "$FAKE_NAME"; sleep 0.2; echo another-cluster; }; true ;;
esac
`,
	})
	name := "fake-kind-path"
	env := []string{
		"CLUSTER=kind", "CLUSTER_NAME=" + name, "KIND_CALLS=" + calls, "FAKE_NAME=" + name,
		"KIND_BIN=" + strings.SplitN(path, string(os.PathListSeparator), 2)[0] + "/kind",
	}
	for _, step := range []string{"up", "up", "down"} {
		if out, err, _ := runScript(t, path, env, step); err != nil {
			t.Fatalf("cluster.sh %s: %v\n%s", step, err, out)
		}
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("..")
	kubeconfig := filepath.Join(root, ".state", "kubeconfig-"+name)
	want := []string{
		"get clusters",
		"create cluster --name " + name + " --kubeconfig " + kubeconfig + " --wait 120s",
		"get clusters",
		"export kubeconfig --name " + name + " --kubeconfig " + kubeconfig,
		"delete cluster --name " + name + " --kubeconfig " + kubeconfig,
	}
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("kind was called with:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

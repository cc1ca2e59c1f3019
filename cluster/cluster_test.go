// Package cluster holds the scripts that start and stop the workshop cluster.
// These tests drive the kind path of cluster.sh and with-cluster.sh with
// stand-in `docker`, `kind` and `kubectl` commands that record how they were
// called, so they run on any machine, with or without Docker, and on a fresh
// clone (no ./bin).
package cluster

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeBin writes executable shell scripts into a temporary folder and returns
// the folder.
func fakeBin(t *testing.T, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// withPath is env plus a PATH that finds dir's commands first.
func withPath(dir string, env ...string) []string {
	return append(env, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func run(t *testing.T, env []string, name string, args ...string) (string, time.Duration, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	return string(out), time.Since(start), err
}

// What `docker info` says when the client is installed but no engine runs.
const noEngine = "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2; exit 1\n"

// TestKindFailsFastWithoutDocker: with no Docker engine, CLUSTER=kind says so
// within seconds, and says what to do instead. It must say that even on a
// fresh clone, where ./bin/kind does not exist yet: "run make tools" would
// send the user into a long build that cannot help.
func TestKindFailsFastWithoutDocker(t *testing.T) {
	cases := map[string]struct {
		docker string
		want   string
	}{
		"no docker command": {"", "command is on PATH"},
		"no engine":         {noEngine, "needs a running Docker engine"},
		// An engine that never answers: docker_ready gives up after 10 s.
		"engine hangs": {"exec sleep 60\n", "no answer within 10s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			scripts := map[string]string{}
			env := []string{"CLUSTER=kind", "CLUSTER_NAME=fake-nodocker", "KIND_BIN=/nonexistent/kind"}
			if tc.docker != "" {
				scripts["docker"] = tc.docker
			} else {
				env = append(env, "DOCKER=docker-is-not-installed")
			}
			out, took, err := run(t, withPath(fakeBin(t, scripts), env...), "./cluster.sh", "up")
			if err == nil {
				t.Fatalf("cluster.sh up with CLUSTER=kind and no Docker engine succeeded:\n%s", out)
			}
			if !strings.Contains(out, tc.want) || !strings.Contains(out, "make cluster") {
				t.Errorf("the message does not say what is wrong (%q) and what to do instead:\n%s", tc.want, out)
			}
			if strings.Contains(out, "make tools") {
				t.Errorf("the message sends the user to 'make tools', which cannot help without Docker:\n%s", out)
			}
			if took > 15*time.Second {
				t.Errorf("took %s to fail; it must fail within seconds", took)
			}
		})
	}
}

// TestMakeKindChecksDockerBeforeBuilding: `CLUSTER=kind make cluster` must not
// start a build (kind, kubectl, let alone the kwok control plane) when no
// engine answers. make -n lists what would run; the real run then fails at
// the check.
func TestMakeKindChecksDockerBeforeBuilding(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	// MAKEFLAGS and MAKELEVEL empty: under `make test` this test runs
	// inside a make, and a sub-make would print "make[1]: Entering ...".
	env := withPath(fakeBin(t, map[string]string{"docker": noEngine}), "CLUSTER=kind", "MAKEFLAGS=", "MAKELEVEL=")
	plan, _, err := run(t, env, "make", "-C", "..", "-n", "cluster")
	if err != nil {
		t.Fatalf("make -n cluster: %v\n%s", err, plan)
	}
	var first string
	for _, line := range strings.Split(plan, "\n") {
		if !strings.HasPrefix(line, "make:") && !strings.HasPrefix(line, "make[") { // make -C says where it went
			first = line
			break
		}
	}
	if first != "cluster/cluster.sh docker-check" {
		t.Errorf("CLUSTER=kind make cluster starts with %q, want the Docker check first; the plan:\n%s", first, plan)
	}
	for _, kwokOnly := range []string{"kube-apiserver", "etcd", "kwokctl"} {
		if strings.Contains(plan, kwokOnly) {
			t.Errorf("CLUSTER=kind make cluster would build %s, which only the kwok cluster runs; the plan:\n%s", kwokOnly, plan)
		}
	}
	out, took, err := run(t, env, "make", "-C", "..", "cluster")
	if err == nil || !strings.Contains(out, "needs a running Docker engine") || strings.Contains(out, "building") {
		t.Errorf("CLUSTER=kind make cluster with no engine: err=%v, want a failure naming Docker before any build:\n%s", err, out)
	}
	if took > 15*time.Second {
		t.Errorf("took %s to fail; it must fail within seconds", took)
	}
}

// TestMakeRefusesOversizedKindRuns: a kind cluster is one node of at most 110
// pods, so the full-size Logger runs refuse to start there, and say where
// they do run.
func TestMakeRefusesOversizedKindRuns(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	for _, target := range []string{"chaos", "bench-loggers", "bench"} {
		out, _, err := run(t, []string{"CLUSTER=kind", "MAKEFLAGS="}, "make", "-C", "..", "-n", target)
		if err == nil || !strings.Contains(out, "110 pods") || !strings.Contains(out, "CLUSTER=kwok") {
			t.Errorf("CLUSTER=kind make %s: err=%v, want a refusal naming the 110-pod limit and CLUSTER=kwok:\n%s", target, err, out)
		}
	}
	// A bench small enough for one node still runs.
	if out, _, err := run(t, []string{"CLUSTER=kind", "MAKEFLAGS="}, "make", "-C", "..", "-n", "bench", "M=50"); err != nil {
		t.Errorf("CLUSTER=kind make bench M=50 refused: %v\n%s", err, out)
	}
}

// kindStandIns is a Docker engine that answers, a kind that records its
// arguments and lists the cluster once `create` ran (writing the kubeconfig
// it was given), and a kubectl whose API server answers while $READY exists.
// `docker start` brings it back.
func kindStandIns(t *testing.T) string {
	return fakeBin(t, map[string]string{
		// With OFFLINE set, kindest/node is neither here nor pullable, and
		// make kind-image has built the node image, unless NO_SOURCE_IMAGE
		// is set too.
		"docker": `echo "docker $*" >>"$CALLS"
case "$1 $2 $3" in
info*) echo 20.10.24 ;;
start*) touch "$READY" ;;
"image inspect kindest/"*) [ -z "$OFFLINE" ] ;;
"image inspect operator-flow/"*) [ -z "$NO_SOURCE_IMAGE" ] ;;
pull*) [ -z "$OFFLINE" ] || { echo 'Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host' >&2; exit 1; } ;;
esac
`,
		// `get clusters` lists one more cluster a moment later: whoever
		// reads the list must read it to the end, or the lister dies of
		// SIGPIPE and, with pipefail, the cluster counts as missing (and is
		// created again).
		"kind": `echo "kind $*" >>"$CALLS"
case "$1 $2" in
"get clusters") grep -q '^kind create cluster' "$CALLS" && { echo "$FAKE_NAME"; sleep 0.2; echo another-cluster; }; true ;;
"create cluster") while [ $# -gt 0 ]; do [ "$1" = --kubeconfig ] && echo fake >"$2"; shift; done; touch "$READY" ;;
esac
`,
		"kubectl": `test -e "$READY"` + "\n",
	})
}

// kindEnv is the environment of one stand-in kind cluster, NAME, whose calls
// go to the returned file.
func kindEnv(t *testing.T, bin, name string) ([]string, string, string) {
	dir := t.TempDir()
	calls, ready := filepath.Join(dir, "calls"), filepath.Join(dir, "ready")
	env := withPath(bin, "CLUSTER=kind", "CLUSTER_NAME="+name, "FAKE_NAME="+name, "CALLS="+calls, "READY="+ready,
		"KIND_BIN="+filepath.Join(bin, "kind"), "KUBECTL="+filepath.Join(bin, "kubectl"))
	t.Cleanup(func() {
		root, _ := filepath.Abs("..")
		for _, f := range []string{"kubeconfig-", "cluster-type-"} {
			if err := os.Remove(filepath.Join(root, ".state", f+name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Error(err)
			}
		}
	})
	return env, calls, ready
}

func readCalls(t *testing.T, calls string) []string {
	t.Helper()
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestKindPathCommands runs `up` twice and `down` once and checks what kind
// was asked to do: create with the pinned node image and cluster/kind.yaml,
// then reuse, then delete.
func TestKindPathCommands(t *testing.T) {
	name := "fake-kind-path"
	env, calls, _ := kindEnv(t, kindStandIns(t), name)
	for _, step := range []string{"up", "up", "down"} {
		if out, _, err := run(t, env, "./cluster.sh", step); err != nil {
			t.Fatalf("cluster.sh %s: %v\n%s", step, err, out)
		}
	}
	root, _ := filepath.Abs("..")
	kubeconfig := filepath.Join(root, ".state", "kubeconfig-"+name)
	image := pin(t, "KIND_NODE_IMAGE")
	want := []string{
		"docker info --format {{.ServerVersion}}",
		"kind get clusters",
		"docker image inspect " + image,
		"kind create cluster --name " + name + " --kubeconfig " + kubeconfig + " --image " + image + " --config " + filepath.Join(root, "cluster", "kind.yaml") + " --wait 120s",
		"docker info --format {{.ServerVersion}}",
		"kind get clusters",
		"kind export kubeconfig --name " + name + " --kubeconfig " + kubeconfig,
		"docker info --format {{.ServerVersion}}",
		"kind delete cluster --name " + name + " --kubeconfig " + kubeconfig,
	}
	if got := readCalls(t, calls); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the calls were:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestKindStoppedNodeIsStarted: `kind get clusters` lists a stopped node too.
// `up` must not report it ready: it starts the node's container and waits
// until the API server answers.
func TestKindStoppedNodeIsStarted(t *testing.T) {
	name := "fake-kind-stopped"
	env, calls, ready := kindEnv(t, kindStandIns(t), name)
	if out, _, err := run(t, env, "./cluster.sh", "up"); err != nil {
		t.Fatalf("cluster.sh up: %v\n%s", err, out)
	}
	if err := os.Remove(ready); err != nil { // docker stop
		t.Fatal(err)
	}
	out, _, err := run(t, env, "./cluster.sh", "up")
	if err != nil {
		t.Fatalf("cluster.sh up on a stopped node: %v\n%s", err, out)
	}
	got := strings.Join(readCalls(t, calls), "\n")
	if !strings.Contains(got, "docker start "+name+"-control-plane") {
		t.Errorf("up did not start the stopped node's container; the calls:\n%s\noutput:\n%s", got, out)
	}
	if _, err := os.Stat(ready); err != nil {
		t.Errorf("up reported a cluster whose API server does not answer:\n%s", out)
	}
	if out, _, err := run(t, env, "./cluster.sh", "down"); err != nil {
		t.Errorf("cluster.sh down: %v\n%s", err, out)
	}
}

// TestOtherClusterTypeIsRefused: while a kwok cluster made by `make cluster`
// is there, CLUSTER=kind must not create a second cluster into the same
// kubeconfig (or run the tests on the kwok one); it says how to go on.
func TestOtherClusterTypeIsRefused(t *testing.T) {
	name := "fake-kind-mismatch"
	env, calls, _ := kindEnv(t, kindStandIns(t), name)
	root, _ := filepath.Abs("..")
	if err := os.MkdirAll(filepath.Join(root, ".state"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".state", "cluster-type-"+name), []byte("kwok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{"./cluster.sh up", "./with-cluster.sh true"} {
		f := strings.Fields(script)
		out, _, err := run(t, env, f[0], f[1:]...)
		if err == nil || !strings.Contains(out, "make cluster-down") || !strings.Contains(out, "CLUSTER=kwok") {
			t.Errorf("%s with CLUSTER=kind while a kwok cluster is there: err=%v, want a refusal that says what to do:\n%s", script, err, out)
		}
	}
	if b, _ := os.ReadFile(calls); strings.Contains(string(b), "kind ") {
		t.Errorf("kind was called although a kwok cluster is there:\n%s", b)
	}
}

// TestWithClusterRemovesOnlyWhatItCreated: with-cluster.sh removes a cluster
// it created, and leaves one that was there before, running or stopped.
func TestWithClusterRemovesOnlyWhatItCreated(t *testing.T) {
	bin := kindStandIns(t)

	name := "fake-with-new"
	env, calls, _ := kindEnv(t, bin, name)
	if out, _, err := run(t, env, "./with-cluster.sh", "sh", "-c", `test -s "$E2E_KUBECONFIG"`); err != nil {
		t.Fatalf("with-cluster.sh: %v\n%s", err, out)
	}
	got := strings.Join(readCalls(t, calls), "\n")
	if !strings.Contains(got, "kind create cluster") || !strings.Contains(got, "kind delete cluster") {
		t.Errorf("with no cluster, with-cluster.sh must create one and delete it afterwards; the calls:\n%s", got)
	}

	name = "fake-with-stopped"
	env, calls, ready := kindEnv(t, bin, name)
	if out, _, err := run(t, env, "./cluster.sh", "up"); err != nil {
		t.Fatalf("cluster.sh up: %v\n%s", err, out)
	}
	if err := os.Remove(ready); err != nil { // docker stop
		t.Fatal(err)
	}
	if out, _, err := run(t, env, "./with-cluster.sh", "true"); err != nil {
		t.Fatalf("with-cluster.sh on a stopped cluster: %v\n%s", err, out)
	}
	got = strings.Join(readCalls(t, calls), "\n")
	if strings.Contains(got, "kind delete cluster") {
		t.Errorf("with-cluster.sh deleted the user's (stopped) cluster; the calls:\n%s", got)
	}
	if out, _, err := run(t, env, "./cluster.sh", "down"); err != nil {
		t.Errorf("cluster.sh down: %v\n%s", err, out)
	}
}

// pin is a version from tools/versions.mk, the one place for pins.
func pin(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../tools/versions.mk")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == name && f[1] == ":=" {
			return f[2]
		}
	}
	t.Fatalf("tools/versions.mk pins no %s", name)
	return ""
}

// TestKindOfflineUsesLocalNodeImage: where kindest/node cannot be pulled and
// `make kind-image` built a node image, `up` uses that one and says so.
func TestKindOfflineUsesLocalNodeImage(t *testing.T) {
	name := "fake-kind-offline"
	env, calls, _ := kindEnv(t, kindStandIns(t), name)
	env = append(env, "OFFLINE=1")
	out, _, err := run(t, env, "./cluster.sh", "up")
	if err != nil {
		t.Fatalf("cluster.sh up: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, _, err := run(t, env, "./cluster.sh", "down"); err != nil {
			t.Errorf("cluster.sh down: %v\n%s", err, out)
		}
	})
	local := "operator-flow/kind-node:" + pin(t, "KUBE_VERSION")
	got := strings.Join(readCalls(t, calls), "\n")
	if !strings.Contains(got, "kind create cluster --name "+name+" --kubeconfig ") || !strings.Contains(got, " --image "+local+" ") {
		t.Errorf("up did not create the cluster from %s; the calls:\n%s", local, got)
	}
	if !strings.Contains(out, "cannot be pulled here; using "+local) {
		t.Errorf("up did not say which node image it used and why:\n%s", out)
	}
}

// TestKindWithoutNodeImageSaysHowToGetOne: where kindest/node is neither here
// nor pullable and no node image was built from source, `up` stops within
// seconds, before kind runs, with one line that gives the pull's error and
// the command that builds a node image (Linux) or what to do instead.
func TestKindWithoutNodeImageSaysHowToGetOne(t *testing.T) {
	name := "fake-kind-noimage"
	env, calls, _ := kindEnv(t, kindStandIns(t), name)
	out, took, err := run(t, append(env, "OFFLINE=1", "NO_SOURCE_IMAGE=1"), "./cluster.sh", "up")
	if err == nil {
		t.Fatalf("cluster.sh up with no node image anywhere succeeded:\n%s", out)
	}
	want := "'make kind-image' (about "
	if runtime.GOOS != "linux" {
		want = "make cluster"
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "error: ") {
			line = l
		}
	}
	if !strings.Contains(line, "cannot be pulled (") || !strings.Contains(line, "no such host") || !strings.Contains(line, want) {
		t.Errorf("want one error line that gives the pull's error and %q:\n%s", want, out)
	}
	if got := strings.Join(readCalls(t, calls), "\n"); strings.Contains(got, "kind create") {
		t.Errorf("kind was asked to create a cluster with no node image; the calls:\n%s", got)
	}
	if took > 15*time.Second {
		t.Errorf("took %s to fail; it must fail within seconds", took)
	}
}

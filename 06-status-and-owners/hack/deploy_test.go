// Package hack holds stage 06's scripts. These tests drive deploy.sh with
// stand-in docker, kind and kubectl commands, since no Docker engine runs on
// the machines that test this repository.
package hack

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// standIns writes executable shell scripts into a temporary folder and
// returns it.
func standIns(t *testing.T, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func deploy(t *testing.T, env ...string) (string, error, time.Duration) {
	t.Helper()
	cmd := exec.Command("./deploy.sh")
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	return string(out), err, time.Since(start)
}

func TestKindWithoutDockerFailsFast(t *testing.T) {
	cases := map[string][]string{
		"no docker command": {"DOCKER=docker-is-not-installed"},
		// What `docker info` says when the client is installed but no engine runs.
		"no engine": {"DOCKER=" + filepath.Join(standIns(t, map[string]string{
			"docker": "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2; exit 1\n",
		}), "docker")},
	}
	for name, env := range cases {
		t.Run(name, func(t *testing.T) {
			out, err, took := deploy(t, append(env, "CLUSTER=kind")...)
			if err == nil {
				t.Fatalf("deploy.sh with CLUSTER=kind and no Docker succeeded:\n%s", out)
			}
			if !strings.Contains(out, "Docker") || !strings.Contains(out, "make run-6") {
				t.Errorf("the message does not say what is wrong and what to do instead:\n%s", out)
			}
			if took > 15*time.Second {
				t.Errorf("took %s to fail; it must fail within seconds", took)
			}
		})
	}
}

func TestKwokExplainsOutOfCluster(t *testing.T) {
	out, err, _ := deploy(t, "CLUSTER=kwok")
	if err == nil {
		t.Errorf("deploy.sh on kwok claims success, but deployed nothing")
	}
	for _, want := range []string{"CLUSTER=kind", "make run-6", "make lab-6", "Nothing was deployed"} {
		if !strings.Contains(out, want) {
			t.Errorf("the explanation lacks %q:\n%s", want, out)
		}
	}
}

// TestKindPathCommands runs the whole kind path against stand-ins that
// record their arguments, and checks what each was asked to do.
func TestKindPathCommands(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	dir := standIns(t, map[string]string{
		// An engine that answers; `build` also lists its context.
		"docker": `echo "docker $*" >>"$CALLS"
case "$1" in
info) echo 28.2.2 ;;
build) for a; do last=$a; done; ls -A "$last" | sed 's/^/context: /' >>"$CALLS" ;;
esac
`,
		// `kind get clusters` lists the cluster once `create` has run.
		"kind": `echo "kind $*" >>"$CALLS"
case "$1 $2" in
"get clusters") grep -q '^kind create cluster' "$CALLS" && echo "$FAKE_NAME"; true ;;
esac
`,
		"kubectl": `echo "kubectl $*" >>"$CALLS"` + "\n",
	})
	name := "fake-deploy-6"
	env := []string{
		"CLUSTER=kind", "CLUSTER_NAME=" + name, "FAKE_NAME=" + name, "CALLS=" + calls,
		"PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"DOCKER=" + filepath.Join(dir, "docker"), "KIND_BIN=" + filepath.Join(dir, "kind"), "KUBECTL=" + filepath.Join(dir, "kubectl"),
	}
	t.Cleanup(func() {
		// cluster.sh keeps the stand-in cluster's kubeconfig and type in
		// .state; remove them the way a user would.
		cmd := exec.Command("../../cluster/cluster.sh", "down")
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("cluster.sh down: %v\n%s", err, out)
		}
	})
	if out, err, _ := deploy(t, env...); err != nil {
		t.Fatalf("deploy.sh: %v\n%s", err, out)
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		"kind create cluster --name " + name,
		"docker build -t operator-flow-06:dev -f ",
		"/06-status-and-owners/Dockerfile ",
		"context: go.mod", "context: go.sum", "context: apicount", "context: 06-status-and-owners",
		"kind load docker-image operator-flow-06:dev --name " + name,
		"apply --server-side -f " + "", "/06-status-and-owners/config/crd",
		"apply --server-side -k ", "/06-status-and-owners/config/default",
		"rollout status deployment/operator-flow-06",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no call with %q; the calls were:\n%s", want, got)
		}
	}
	// The build context is small: ./bin (the cluster binaries) and .state
	// never reach the Docker engine.
	for _, unwanted := range []string{"context: bin", "context: .state"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("the build context holds %q:\n%s", strings.TrimPrefix(unwanted, "context: "), got)
		}
	}
}

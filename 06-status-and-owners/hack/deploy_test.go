// Package hack holds stage 06's scripts. These tests drive deploy.sh with
// stand-in docker, kind and kubectl commands, since no Docker engine runs on
// the machines that test this repository.
package hack

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

func deploy(t *testing.T, env ...string) (string, time.Duration, error) {
	t.Helper()
	cmd := exec.Command("./deploy.sh")
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	return string(out), time.Since(start), err
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
			out, took, err := deploy(t, append(env, "CLUSTER=kind")...)
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
	out, _, err := deploy(t, "CLUSTER=kwok")
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
		// An engine that answers; `build` also lists its context and
		// keeps the binary it was sent.
		"docker": `echo "docker $*" >>"$CALLS"
case "$1" in
info) echo 28.2.2 ;;
version) echo amd64 ;;
build) for a; do last=$a; done; ls -A "$last" | sed 's/^/context: /' >>"$CALLS"; cp "$last/manager" "$MANAGER" ;;
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
	manager := filepath.Join(t.TempDir(), "manager")
	env := []string{
		"CLUSTER=kind", "CLUSTER_NAME=" + name, "FAKE_NAME=" + name, "CALLS=" + calls, "MANAGER=" + manager,
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
	if out, _, err := deploy(t, env...); err != nil {
		t.Fatalf("deploy.sh: %v\n%s", err, out)
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		"kind create cluster --name " + name,
		"docker build -t operator-flow-06:dev /",
		"context: Dockerfile", "context: manager",
		"kind load docker-image operator-flow-06:dev --name " + name,
		"apply --server-side -f " + "", "/06-status-and-owners/config/crd",
		"apply --server-side -k ", "/06-status-and-owners/config/default",
		"rollout status deployment/operator-flow-06",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no call with %q; the calls were:\n%s", want, got)
		}
	}
	// The build context is the binary and the Dockerfile: no source, and
	// never ./bin (the cluster binaries) or .state.
	for _, unwanted := range []string{"context: bin", "context: .state", "context: go.mod", "context: " + "06-status-and-owners"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("the build context holds %q:\n%s", strings.TrimPrefix(unwanted, "context: "), got)
		}
	}
	checkStaticLinux(t, manager, "amd64")
}

// checkStaticLinux fails unless path is a Linux ELF executable for arch with
// no program interpreter: a static binary, which is all a FROM scratch image
// can run.
func checkStaticLinux(t *testing.T, path, arch string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("the binary sent to docker build: %v", err)
	}
	defer func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != machine {
		t.Errorf("the binary is for %s, want %s (the engine's architecture)", f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary is dynamically linked (it has a program interpreter); FROM scratch has no libc to load")
		}
	}
}

// TestDockerfilePullsNothing: the image must build with no registry, and
// run as a numeric non-root user (Pod Security "restricted").
func TestDockerfilePullsNothing(t *testing.T) {
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var from, user []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.EqualFold(f[0], "FROM") {
			from = append(from, f[1])
		}
		if len(f) > 1 && strings.EqualFold(f[0], "USER") {
			user = append(user, f[1])
		}
	}
	if strings.Join(from, " ") != "scratch" {
		t.Errorf("the Dockerfile starts FROM %v; only scratch needs no pull", from)
	}
	if len(user) != 1 || !regexp.MustCompile(`^[1-9][0-9]*:[1-9][0-9]*$`).MatchString(user[0]) {
		t.Errorf("USER %v: want one numeric non-root uid:gid, which runAsNonRoot can check without /etc/passwd", user)
	}
}

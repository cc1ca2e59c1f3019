package tools

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The kind suite's own Docker engine (tools/kind/dockerd.sh) runs as root.
// These tests start it with a stand-in dockerd, which records its flags and
// runs until SIGTERM, and a stand-in docker that answers, in a copy of the
// scripts: nothing here starts a real engine or touches this checkout's
// .state.

// engineStandIns: dockerd records its arguments and whether its data-root
// was still there when it was stopped; docker answers every call.
var engineStandIns = map[string]string{
	"dockerd": `echo "dockerd $*" >>"$CALLS"
while [ $# -gt 0 ]; do
	case $1 in
	--pidfile) pidfile=$2 ;;
	--data-root) data=$2 ;;
	esac
	shift
done
echo $$ >"$pidfile"
sleep 300 &
sleeper=$!
trap 'kill $sleeper; if [ -d "$data" ]; then echo "dockerd stopped, its data-root still there" >>"$CALLS"; else echo "dockerd stopped after its data-root was removed" >>"$CALLS"; fi; rm -f "$pidfile"; exit 0' TERM
wait
`,
	"docker": `echo "docker $*" >>"$CALLS"` + "\n",
}

// engine is one stand-in engine's world: a copy of the repository's files it
// needs (root), the stand-ins, and where the runtime is installed.
type engine struct {
	root, calls, runtimeDir string
	env                     []string
	dockerd                 int // the stand-in dockerd's pid, once started
}

func newEngine(t *testing.T, files ...string) *engine {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("dockerd.sh runs on Linux only (setsid, util-linux)")
	}
	bin, tmp := t.TempDir(), t.TempDir()
	for name, body := range engineStandIns {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := &engine{root: copyRepo(t, append(files, "tools/kind/dockerd.sh", "tools/kind/runc-nosysresource")...),
		calls: filepath.Join(tmp, "calls"), runtimeDir: filepath.Join(tmp, "runtime")}
	e.env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "CALLS="+e.calls, "KIND_RUNTIME_DIR="+e.runtimeDir)
	t.Cleanup(e.kill)
	return e
}

// copyRepo copies files, relative to the repository root, into a temporary
// folder laid out the same way, and returns that folder.
func copyRepo(t *testing.T, files ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// run runs a command in the copy, with the stand-ins first on PATH.
func (e *engine) run(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = e.root, e.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// start runs dockerd.sh start with args, and returns the stand-in dockerd's
// pid, from the pid file it wrote.
func (e *engine) start(t *testing.T, args ...string) int {
	t.Helper()
	e.run(t, "tools/kind/dockerd.sh", append([]string{"start"}, args...)...)
	pidfile := filepath.Join(e.root, ".state", "kind-dockerd", "dockerd.pid")
	var b []byte
	var err error
	wrote := poll(5*time.Second, 50*time.Millisecond, func() bool {
		b, err = os.ReadFile(pidfile)
		e.dockerd, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return e.dockerd > 0
	})
	if !wrote {
		t.Fatalf("dockerd.sh start: the stand-in dockerd wrote no pid file within 5s (%v): %q", err, b)
	}
	return e.dockerd
}

// kill ends a stand-in dockerd that a failing check left running.
func (e *engine) kill() {
	if e.dockerd > 0 && alive(e.dockerd) {
		_ = syscall.Kill(e.dockerd, syscall.SIGKILL)
	}
}

func (e *engine) recorded(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(e.calls)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// alive: process pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !bytes.Contains(b, []byte(") Z "))
}

// gone polls until process pid has ended, for up to timeout.
func gone(pid int, timeout time.Duration) bool {
	return poll(timeout, 100*time.Millisecond, func() bool { return !alive(pid) })
}

// poll calls done every interval until it returns true, for up to timeout,
// and reports whether it did.
func poll(timeout, interval time.Duration, done func() bool) bool {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	deadline := time.After(timeout)
	for !done() {
		select {
		case <-deadline:
			return done()
		case <-tick.C:
		}
	}
	return true
}

// TestKindEngineSettings: the engine leaves the machine's network settings
// to the machine's engine (no iptables, ip6tables or ip_forward changes),
// and its default runtime, which runs as root, is a copy outside the
// checkout that only its user may change, equal to the checkout's.
func TestKindEngineSettings(t *testing.T) {
	e := newEngine(t)
	pid := e.start(t)
	started := e.recorded(t)
	for _, flag := range []string{" --iptables=false", " --ip6tables=false", " --ip-forward=false", " --bridge none", " --default-runtime nosysresource"} {
		if !strings.Contains(started, flag) {
			t.Errorf("dockerd was started without %s:\n%s", flag, started)
		}
	}
	runtime := filepath.Join(e.runtimeDir, "runc-nosysresource")
	if !strings.Contains(started, " --add-runtime nosysresource="+runtime+" ") {
		t.Errorf("the engine's runtime is not %s, outside the checkout:\n%s", runtime, started)
	}
	want, _ := os.ReadFile(filepath.Join(e.root, "tools", "kind", "runc-nosysresource"))
	got, err := os.ReadFile(runtime)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s is not a copy of tools/kind/runc-nosysresource (%v)", runtime, err)
	}
	for _, path := range []string{e.runtimeDir, runtime} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: %v %v, want mode 0755 (only its owner may change what the engine runs as root)", path, fi, err)
		}
	}
	e.run(t, "tools/kind/dockerd.sh", "stop")
	if !gone(pid, 5*time.Second) {
		t.Errorf("dockerd.sh stop left the engine (pid %d) running", pid)
	}
}

// TestKindEngineStopsWhenItsOwnerIsKilled: the suite starts the engine with
// its own pid. A SIGKILL runs no trap, so something else must notice: the
// engine is stopped within seconds of the suite's end, however it ended.
func TestKindEngineStopsWhenItsOwnerIsKilled(t *testing.T) {
	e := newEngine(t)
	owner := exec.Command("sleep", "600")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.Process.Kill() })
	pid := e.start(t, strconv.Itoa(owner.Process.Pid))
	if err := owner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait()
	if !gone(pid, 10*time.Second) {
		t.Errorf("the engine (pid %d) still runs 10s after its owner (pid %d) was killed with SIGKILL", pid, owner.Process.Pid)
	}
}

// TestCleanStopsTheKindEngine: `make clean` removes .state, where the engine
// keeps its data and its pid file; it must stop the engine first, or the
// engine runs on with neither (and dockerd.sh stop no longer finds it).
func TestCleanStopsTheKindEngine(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	e := newEngine(t, "Makefile", "tools/versions.mk", "labs/lab.sh", "cluster/cluster.sh")
	pid := e.start(t)
	e.env = append(e.env, "MAKEFLAGS=", "MAKELEVEL=", "CLUSTER=kwok", "CLUSTER_NAME=")
	e.run(t, "make", "clean")
	if !gone(pid, 5*time.Second) {
		t.Fatalf("the engine (pid %d) still runs after make clean", pid)
	}
	if got := e.recorded(t); !strings.Contains(got, "dockerd stopped, its data-root still there") {
		t.Errorf("make clean did not stop the engine before it removed .state:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(e.root, ".state")); err == nil {
		t.Error("make clean left .state")
	}
}

// TestRuntimeIgnoresRuncReal: what the runtime runs as root is fixed, not
// taken from its environment.
func TestRuntimeIgnoresRuncReal(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	fake := filepath.Join(dir, "runc")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("kind/runc-nosysresource", "--version")
	cmd.Env = append(os.Environ(), "RUNC_REAL="+fake)
	out, _ := cmd.CombinedOutput() // /usr/sbin/runc may be missing here: only what it ran matters
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("runc-nosysresource ran RUNC_REAL=%s instead of Debian's runc:\n%s", fake, out)
	}
}

package labs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The lab scripts (lab.sh, and modules A2's and A3's hack/lab.sh) run here
// in a sandbox with stand-ins on PATH: kubectl and curl answer success and
// log their arguments, go "builds" a small operator stand-in that writes
// its arguments next to itself and waits for SIGTERM, and go run does
// nothing. The sandbox's path holds a space and a "[", as a checkout's may.

// standInOperator is the source of the operator stand-in: it writes its
// arguments, one a line, into <its path>.argv, then waits for a signal.
const standInOperator = `package main

import (
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	_ = os.WriteFile(os.Args[0]+".argv", []byte(strings.Join(os.Args[1:], "\n")+"\n"), 0o644)
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
`

type labSandbox struct {
	t    *testing.T
	root string
	log  string // what the stand-ins were asked, one command a line
}

func newLabSandbox(t *testing.T) *labSandbox {
	t.Helper()
	tmp := t.TempDir()
	operator := filepath.Join(tmp, "operator")
	if err := os.WriteFile(filepath.Join(tmp, "main.go"), []byte(standInOperator), 0o644); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", operator, "main.go")
	build.Dir = tmp
	build.Env = append(os.Environ(), "GO111MODULE=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the operator stand-in: %v\n%s", err, out)
	}
	s := &labSandbox{t: t, root: filepath.Join(tmp, "check out [1")}
	s.log = filepath.Join(tmp, "commands.log")
	for _, f := range []string{"labs/lab.sh", "advanced/A2-admission-webhook/hack/lab.sh", "advanced/A3-api-versions/hack/lab.sh", "advanced/bases.txt"} {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		s.write(f, string(b), 0o755)
	}
	endpoints := "package main // \"metrics-bind-address\" \"health-probe-bind-address\"\n"
	for _, dir := range []string{"05-controller-runtime", "06-status-and-owners", "advanced/A2-admission-webhook", "advanced/A3-api-versions"} {
		s.write(dir+"/main.go", endpoints, 0o644)
	}
	s.write("01-crd-yaml/crds/crds.yaml", "kind: CustomResourceDefinition\n", 0o644)
	s.write("01-crd-yaml/samples/samples.yaml", "kind: Logger\n", 0o644)
	s.write("advanced/A1-admission-policies/config/admission/policy.yaml", "kind: ValidatingAdmissionPolicy\n", 0o644)
	s.write("advanced/A3-api-versions/config/crd/loggers.yaml", "strategy: Webhook\n", 0o644)
	s.write("cluster/cluster.sh", "#!/bin/sh\necho \"$(cd \"$(dirname \"$0\")/..\" && pwd)/.state/kubeconfig\"\n", 0o755)
	logged := "printf '%s\\n' \"$(basename \"$0\") $*\" >>\"$STANDIN_LOG\"\n"
	s.write("bin/kubectl", "#!/bin/sh\n"+logged+`case "$*" in
*"-f -"*) cat >/dev/null ;;
*"--local"*) echo "kind: List" ;;
esac
`, 0o755)
	s.write("bin/curl", "#!/bin/sh\n", 0o755)
	s.write("bin/go", "#!/bin/sh\n"+logged+`[ "$1" = build ] || exit 0
cp "$STANDIN_OPERATOR" "$3"
`, 0o755)
	t.Setenv("STANDIN_LOG", s.log)
	t.Setenv("STANDIN_OPERATOR", operator)
	t.Setenv("PATH", filepath.Join(s.root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("CLUSTER_NAME", "")
	t.Setenv("CLUSTER", "kwok")
	t.Setenv("LAB_OPERATOR_ARGS", "")
	if err := os.MkdirAll(filepath.Join(s.root, ".state"), 0o700); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *labSandbox) write(rel, content string, mode os.FileMode) {
	s.t.Helper()
	path := filepath.Join(s.root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		s.t.Fatal(err)
	}
}

// run runs a script of the sandbox with its arguments, from its root, and
// stops the operator stand-in it leaves running at the end of the test.
func (s *labSandbox) run(script string, args ...string) (string, error) {
	s.t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(s.root, script)}, args...)...)
	cmd.Dir = s.root
	out, err := cmd.CombinedOutput()
	if pid := s.operatorPID(); pid != 0 {
		s.t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	return string(out), err
}

// operatorPID is the pid in the lab's pid file, if that process runs.
func (s *labSandbox) operatorPID() int {
	b, err := os.ReadFile(filepath.Join(s.root, ".state", "lab-operator.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || syscall.Kill(pid, 0) != nil {
		return 0
	}
	return pid
}

func (s *labSandbox) commands() string {
	b, _ := os.ReadFile(s.log)
	return string(b)
}

// gone waits (lab.sh waits for it too) until pid has exited: no such
// process, or a zombie that whoever inherited it has not reaped yet.
func gone(pid int) bool {
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); <-poll.C {
		state, err := exec.Command("ps", "-p", strconv.Itoa(pid), "-o", "stat=").Output()
		if err != nil || strings.HasPrefix(strings.TrimSpace(string(state)), "Z") {
			return true
		}
	}
	return false
}

// TestRunRemovesWhatTheLastLabSetUp: make run-N, make run-A2 and make
// run-A3 replace the teardown a lab left; they must first run it (module
// A1's policies deleted here), and stop the lab's operator, which holds the
// ports the foreground operator needs.
func TestRunRemovesWhatTheLastLabSetUp(t *testing.T) {
	for _, run := range [][]string{
		{"labs/lab.sh", "run", "5"},
		{"advanced/A2-admission-webhook/hack/lab.sh", "run"},
		{"advanced/A3-api-versions/hack/lab.sh", "run"},
	} {
		t.Run(strings.Join(run, " "), func(t *testing.T) {
			s := newLabSandbox(t)
			if out, err := s.run("labs/lab.sh", "lab", "A1"); err != nil {
				t.Fatalf("lab.sh lab A1: %v\n%s", err, out)
			}
			pid := s.operatorPID()
			if pid == 0 {
				t.Fatal("lab.sh lab A1 left no operator stand-in running")
			}
			before := len(s.commands())
			out, err := s.run(run[0], run[1:]...)
			if err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(run, " "), err, out)
			}
			if after := s.commands()[before:]; !strings.Contains(after, "kubectl delete") {
				t.Errorf("%s did not remove module A1's policies before replacing the teardown; it ran:\n%s", strings.Join(run, " "), after)
			}
			if !gone(pid) {
				t.Errorf("%s left the lab's operator (pid %d) running, holding the ports", strings.Join(run, " "), pid)
			}
		})
	}
}

// TestLabFlagsKeptWhole: a module's --webhook-cert-dir is under the
// checkout; with a space or a "[" in its path it must reach the operator
// as one argument, and so must the flags after it (LAB_OPERATOR_ARGS,
// which make trace-N sets).
func TestLabFlagsKeptWhole(t *testing.T) {
	s := newLabSandbox(t)
	t.Setenv("LAB_OPERATOR_ARGS", "--zap-time-encoding=rfc3339nano")
	if out, err := s.run("advanced/A2-admission-webhook/hack/lab.sh", "lab"); err != nil {
		t.Fatalf("A2's hack/lab.sh lab: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(s.root, ".state", "lab", "operator-A2.argv"))
	if err != nil {
		t.Fatalf("the operator stand-in wrote no arguments: %v", err)
	}
	args := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, want := range []string{"--webhook-cert-dir=" + filepath.Join(s.root, ".state", "webhook-A2"), "--zap-time-encoding=rfc3339nano"} {
		found := false
		for _, a := range args {
			found = found || a == want
		}
		if !found {
			t.Errorf("the operator did not get %q as one argument; it got:\n%s", want, strings.Join(args, "\n"))
		}
	}
}

// TestStopFindsTheOperatorWhateverThePath: lab.sh stop signals the pid in
// its pid file only when that process is still the operator it started; a
// "[" in the checkout's path must not keep it from recognising it.
func TestStopFindsTheOperatorWhateverThePath(t *testing.T) {
	s := newLabSandbox(t)
	if out, err := s.run("labs/lab.sh", "lab", "5"); err != nil {
		t.Fatalf("lab.sh lab 5: %v\n%s", err, out)
	}
	pid := s.operatorPID()
	if pid == 0 {
		t.Fatal("lab.sh lab 5 left no operator stand-in running")
	}
	out, err := s.run("labs/lab.sh", "stop")
	if err != nil {
		t.Fatalf("lab.sh stop: %v\n%s", err, out)
	}
	if !gone(pid) {
		t.Errorf("lab.sh stop left the operator (pid %d) running:\n%s", pid, out)
	}
}

// TestTeardownIsAnAllowlist: the teardown file names a lab, and lab.sh
// runs the command it knows for that lab; a file naming anything else is
// refused, not executed. Module A1's policies are deleted by the label they
// were applied with, not by re-reading the files, which may have changed.
func TestTeardownIsAnAllowlist(t *testing.T) {
	s := newLabSandbox(t)
	marker := filepath.Join(t.TempDir(), "ran")
	s.write(".state/lab-teardown", "touch "+marker+"\n", 0o600)
	out, err := s.run("labs/lab.sh", "stop")
	if _, statErr := os.Stat(marker); statErr == nil {
		t.Errorf("lab.sh stop executed the command the teardown file held:\n%s", out)
	}
	if err == nil || !strings.Contains(out, "names no lab") {
		t.Errorf("lab.sh stop must refuse a teardown file that names no lab; it said (err=%v):\n%s", err, out)
	}

	s = newLabSandbox(t)
	if out, err := s.run("labs/lab.sh", "lab", "A1"); err != nil {
		t.Fatalf("lab.sh lab A1: %v\n%s", err, out)
	}
	before := len(s.commands())
	if out, err := s.run("labs/lab.sh", "stop"); err != nil {
		t.Fatalf("lab.sh stop: %v\n%s", err, out)
	}
	all := s.commands()
	if !strings.Contains(all[:before], "kubectl label --local") || !strings.Contains(all[:before], "operator-flow.dev/lab=A1") {
		t.Errorf("lab.sh lab A1 did not label the policies it applied:\n%s", all[:before])
	}
	if stop := all[before:]; !strings.Contains(stop, "kubectl delete") || !strings.Contains(stop, "-l operator-flow.dev/lab") || strings.Contains(stop, "config/admission") {
		t.Errorf("lab.sh stop did not delete module A1's policies by their label:\n%s", stop)
	}
}

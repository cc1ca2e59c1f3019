package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// OperatorPackage is the Go package the tests build the operator from: the
// stage's own (def, relative to the repository root, e.g. "./02-raw-watch"),
// unless OPERATOR_PKG names another one, such as a learner's copy in
// workspace/.
func OperatorPackage(def string) string {
	if p := os.Getenv("OPERATOR_PKG"); p != "" {
		return p
	}
	return def
}

var (
	buildMu    sync.Mutex
	builtBins  = map[string]string{}
	buildDirMu sync.Once
	buildDir   string
)

// BuildOperator compiles pkg once per test binary and returns the path of the
// executable. A compile error fails the test with the compiler's output.
func BuildOperator(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := builtBins[pkg]; ok {
		return bin
	}
	buildDirMu.Do(func() {
		d, err := os.MkdirTemp("", "operator-flow-e2e-")
		if err != nil {
			panic(err)
		}
		buildDir = d
	})
	bin := filepath.Join(buildDir, fmt.Sprintf("operator-%d", len(builtBins)))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = RepoPath()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the operator from %s failed:\n%s", pkg, out)
	}
	builtBins[pkg] = bin
	return bin
}

// Operator is an operator process started by a test.
type Operator struct {
	t    testing.TB
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	err  error
	// stopping is set by Stop, Kill and ExpectExit: from then on the
	// process ends because the test made it, and that is no crash.
	stopping atomic.Bool
	// ownExit: Wait returned before stopping was set (so an exit that races a
	// Stop counts as the test's). Written before
	// done is closed, read only after.
	ownExit bool
}

// StartOperator runs bin with --kubeconfig pointing at the test cluster plus
// args, and stops it when the test ends, passed or failed. Its output is kept
// in memory for WaitForLog, and printed when the test fails.
func StartOperator(t testing.TB, kubeconfig, bin string, args ...string) *Operator {
	t.Helper()
	o := &Operator{t: t, log: &syncBuffer{}, done: make(chan struct{})}
	o.cmd = exec.Command(bin, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	o.cmd.Stdout = o.log
	o.cmd.Stderr = o.log
	if err := o.cmd.Start(); err != nil {
		t.Fatalf("starting the operator: %v", err)
	}
	go func() {
		o.err = o.cmd.Wait()
		o.ownExit = !o.stopping.Load()
		close(o.done)
	}()
	register(o)
	t.Cleanup(func() {
		defer unregister(o)
		// Still running: it must shut down cleanly, as on any SIGTERM. (A
		// process that ended before, killed or crashed, is the business of
		// the test that saw it end. One that has printed nothing yet may
		// not have installed its signal handler, and then Go's default
		// action for SIGTERM ends it: that says nothing of its shutdown.)
		if !o.Exited() {
			started := o.Log() != ""
			if err := o.Stop(); err != nil && started {
				t.Errorf("the operator did not shut down cleanly on SIGTERM at the end of the test: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("operator output (%s):\n%s", filepath.Base(bin), o.Log())
		}
	})
	return o
}

// Stop asks the operator to shut down (SIGTERM) and waits up to 15 seconds
// for it to exit before killing it. It reports whether the exit was clean.
func (o *Operator) Stop() error {
	select {
	case <-o.done:
		return o.err
	default:
	}
	o.stopping.Store(true)
	_ = o.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-o.done:
		return o.err
	case <-time.After(15 * time.Second):
		o.t.Errorf("the operator did not exit within 15s of SIGTERM; killing it")
		o.Kill()
		return fmt.Errorf("killed after SIGTERM timeout")
	}
}

// Kill stops the operator at once (SIGKILL), as a crash or an OOM kill would.
func (o *Operator) Kill() {
	select {
	case <-o.done:
		return
	default:
	}
	o.stopping.Store(true)
	_ = o.cmd.Process.Kill()
	<-o.done
}

// ExpectExit says that the operator is about to end on its own because of
// what the test does next (it cuts the API server off, say, and the leader
// gives up): that exit is then no crash (see Crash).
func (o *Operator) ExpectExit() { o.stopping.Store(true) }

// Exited reports whether the process has ended.
func (o *Operator) Exited() bool {
	select {
	case <-o.done:
		return true
	default:
		return false
	}
}

// Log is everything the operator printed so far.
func (o *Operator) Log() string { return o.log.String() }

// WaitForLog waits until the operator's output contains every one of parts on
// a single line, and returns that line. It fails as soon as the operator has
// exited without printing it, for whatever reason.
func (o *Operator) WaitForLog(timeout time.Duration, parts ...string) string {
	o.t.Helper()
	var found string
	Eventually(o.t, timeout, fmt.Sprintf("an operator log line with %q", parts), func(context.Context) (bool, string, error) {
		// Read before the log: once the process has exited its output is
		// complete (exec.Cmd.Wait returns after copying it), so a line
		// printed just before the exit is still found.
		exited := o.Exited()
		for _, line := range strings.Split(o.Log(), "\n") {
			if containsAll(line, parts) {
				found = line
				return true, line, nil
			}
		}
		if exited {
			return false, "", fmt.Errorf("the operator exited (%v) without printing it; its last lines:\n%s", o.exitStatus(), lastLines(o.Log(), 5))
		}
		return false, lastLines(o.Log(), 5), nil
	})
	return found
}

// CountLog counts the lines of output that contain every one of parts.
func (o *Operator) CountLog(parts ...string) int {
	n := 0
	for _, line := range strings.Split(o.Log(), "\n") {
		if containsAll(line, parts) {
			n++
		}
	}
	return n
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// syncBuffer is a bytes.Buffer that the process's output goroutine and the
// test can use at the same time.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

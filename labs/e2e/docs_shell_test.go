package e2e

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/operator-flow/operator-flow/harness"
)

// shell is a learner's terminal: one bash for a whole lab, so that what one
// command sets (eval $(make env), TOKEN=$(...)) is there for the next.
type shell struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // stdout and stderr, merged as on a screen
	n      int         // commands sent, for end markers no output can fake
	broken error       // a command that never ended: the shell is unusable
}

func startShell(t *testing.T, env []string) *shell {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir, cmd.Env = harness.RepoPath(), env
	cmd.Stdout, cmd.Stderr = w, w
	// Its own process group, so that cleanup can end whatever it still runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil { // the shell has its own copy
		t.Fatal(err)
	}
	s := &shell{cmd: cmd, stdin: stdin, lines: make(chan string, 4096)}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		_ = stdin.Close() // bash ends at the end of its input...
		// bash's exit status is its last command's, which the test that
		// ran it has checked already.
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second): // ...unless a command still runs
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	return s
}

// run types command and returns what it printed and its exit status.
func (s *shell) run(command string, timeout time.Duration) (string, int, error) {
	if s.broken != nil {
		return "", -1, s.broken
	}
	s.n++
	end := fmt.Sprintf("__doc_test_end_%d_%d", os.Getpid(), s.n)
	// Braces, not a subshell: variables and exports stay. Nothing reads the
	// shell's own input; printf puts the marker on a line of its own.
	if _, err := fmt.Fprintf(s.stdin, "{\n%s\n} </dev/null 2>&1; printf '\\n%s %%d\\n' $?\n", command, end); err != nil {
		s.broken = fmt.Errorf("the shell no longer reads its input: %w", err)
		return "", -1, s.broken
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var out strings.Builder
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.broken = fmt.Errorf("the shell exited")
				return out.String(), -1, s.broken
			}
			if rc, found := strings.CutPrefix(line, end+" "); found {
				n, _ := strconv.Atoi(rc)
				return out.String(), n, nil
			}
			out.WriteString(line + "\n")
		case <-timer.C:
			s.broken = fmt.Errorf("a command ran for more than %s and never ended", timeout)
			return out.String(), -1, s.broken
		}
	}
}

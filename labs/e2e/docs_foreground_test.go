package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// foreground is a command that runs until Ctrl-C, which a learner watches in
// a terminal of its own; here it runs in the background with its output in
// a file.
type foreground struct {
	cmd  string
	line int    // in the .md, for messages
	out  string // the file its output goes to
	pid  int    // also its process group: Ctrl-C signals the whole group
}

// start runs command in the background of s, in a process group of its own
// (set -m), where SIGINT reaches it as Ctrl-C would.
func (s *shell) start(command, out string) (int, error) {
	got, rc, err := s.run(fmt.Sprintf("set -m\n( %s\n) >%q 2>&1 &\necho $!\nset +m", command, out), time.Minute)
	pid, perr := strconv.Atoi(strings.TrimSpace(got))
	if err != nil || rc != 0 || perr != nil {
		return 0, fmt.Errorf("starting it in the background: rc %d, %v: %s", rc, err, got)
	}
	return pid, nil
}

// interrupt presses Ctrl-C in f's terminal and waits for it to end; it
// returns the exit status.
func (s *shell) interrupt(f *foreground) (int, error) {
	if err := syscall.Kill(-f.pid, syscall.SIGINT); err != nil {
		return -1, fmt.Errorf("SIGINT to process group %d: %v", f.pid, err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return !processRunning(f.pid), nil
	}); err != nil {
		_ = syscall.Kill(-f.pid, syscall.SIGKILL)
		return -1, fmt.Errorf("still running 30s after Ctrl-C; killed")
	}
	// bash has reaped it already; wait hands over the exit status.
	out, rc, err := s.run(fmt.Sprintf("wait %d", f.pid), 10*time.Second)
	if err != nil {
		return -1, fmt.Errorf("wait %d: %v %s", f.pid, err, out)
	}
	return rc, nil
}

// startForeground starts the first instance of a command that runs until
// Ctrl-C; "foreground N" queues N-1 more, each started when the lab shows
// its output (the learner opens the next terminal once the first runs).
func (l *lab) startForeground(s step, c command, m mark) {
	n := 1
	if m.arg != "" {
		if _, err := fmt.Sscan(m.arg, &n); err != nil {
			l.t.Errorf("%s:%d: foreground marker: %v", l.md, s.line, err)
		}
	}
	for k := 0; k < n; k++ {
		l.next = append(l.next, foreground{cmd: c.text, line: c.line, out: filepath.Join(l.t.TempDir(), "output")})
	}
	l.awaiting = l.startNext()
}

func (l *lab) startNext() *foreground {
	f := l.next[0]
	l.next = l.next[1:]
	pid, err := l.sh.start(f.cmd, f.out)
	if err != nil {
		l.t.Errorf("%s:%d: %s\n%v", l.md, f.line, f.cmd, err)
		return nil
	}
	f.pid = pid
	l.fg = append(l.fg, &f)
	l.t.Logf("%s:%d: %s: running until Ctrl-C (process group %d)", l.md, f.line, f.cmd, pid)
	return &f
}

// ctrlC presses Ctrl-C where the lab says so, in the oldest terminal.
func (l *lab) ctrlC(s step) {
	if len(l.fg) == 0 {
		l.t.Errorf("%s:%d: Ctrl-C, but nothing runs in the foreground", l.md, s.line)
		return
	}
	f := l.fg[0]
	l.fg = l.fg[1:]
	rc, err := l.sh.interrupt(f)
	out, _ := os.ReadFile(f.out)
	if err != nil {
		l.t.Errorf("%s:%d: Ctrl-C to %q (line %d): %v\n%s", l.md, s.line, f.cmd, f.line, err, lastLines(string(out), 20))
		return
	}
	l.t.Logf("%s:%d: Ctrl-C: %q ended with exit %d; its last lines:\n%s", l.md, s.line, f.cmd, rc, lastLines(string(out), 5))
}

// killForeground ends what a failed lab left running.
func (l *lab) killForeground() {
	for _, f := range l.fg {
		if processRunning(f.pid) {
			_ = syscall.Kill(-f.pid, syscall.SIGKILL)
		}
	}
}

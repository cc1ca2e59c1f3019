package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operator-flow/operator-flow/harness"
)

// docsCluster is TestLabDocs' own cluster: not the workshop's, not
// TestLabTargets'.
const docsCluster = "labs-docs"

// TestLabDocs follows labs 1 to 6, then day two's (A1), the way a learner does: every command of
// every ```sh and ```console block, typed from the repository root into one
// shell per lab, on a cluster of its own. Each command must succeed, unless
// the lab shows it failing (a "fails" marker, or a console command whose
// shown output is kubectl's "Error from server ..." or "error: ..."), and
// wherever the lab shows output, the real output must match it (see
// compareOutput for the rule). What cannot run unattended is marked in the
// markdown (see mark) and listed in the log.
func TestLabDocs(t *testing.T) {
	// From zero, as on a learner's first day: a cluster or logs left by an
	// interrupted run would change every output.
	labClusterDown(t, docsCluster)
	logs, _ := filepath.Glob(harness.RepoPath(".state", "logs", "lab-0?-"+docsCluster+".log"))
	for _, l := range logs {
		_ = os.Remove(l)
	}
	t.Cleanup(func() { labClusterDown(t, docsCluster) })

	labs, _ := filepath.Glob(harness.RepoPath("labs", "0[1-9]-*.md"))
	if len(labs) != 6 {
		t.Fatalf("want labs 01 to 06, found %v", labs)
	}
	dayTwo, _ := filepath.Glob(harness.RepoPath("labs", "A[0-9]-*.md"))
	labs = append(labs, dayTwo...)
	for _, md := range labs {
		// Labs build on each other: lab N starts from what lab N-1 left,
		// and a failure in one does not stop the next.
		t.Run(filepath.Base(md), func(t *testing.T) { followLab(t, md) })
	}
}

// labLog is the path of a lab operator's log. The labs show the workshop
// cluster's; lab.sh puts another cluster's name in it, as in the pid file.
var labLog = regexp.MustCompile(`\.state/logs/lab-(\d\d|A\d)\.log`)

// learnerEnv is a learner's terminal, on the docs cluster. Under make test,
// make's own variables must not reach the make a lab runs: a jobserver
// warning would land in the output the lab shows.
func learnerEnv() []string {
	return slices.DeleteFunc(clusterEnv(docsCluster), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "MAKEFLAGS" || name == "MFLAGS" || name == "MAKELEVEL"
	})
}

// lab is one lab being followed.
type lab struct {
	t        *testing.T
	md       string // labs/NN-*.md, for messages
	sh       *shell
	steps    []step
	logSize  map[string]int64 // lab logs' sizes when the last block started
	fg       []*foreground    // running, oldest first
	next     []foreground     // instances of a foreground block not started yet
	awaiting *foreground      // started; the next text block is its output
	skipped  []string
}

func followLab(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := labLog.ReplaceAllString(string(b), ".state/logs/lab-${1}-"+docsCluster+".log")
	steps, err := parseLab(text)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	l := &lab{t: t, md: "labs/" + filepath.Base(path), sh: startShell(t, learnerEnv()), steps: steps}
	t.Cleanup(l.killForeground)
	// What `eval $(make env)` gives the learner before lab 1.
	if out, rc, err := l.sh.run(`eval "$(make env)"`, time.Minute); err != nil || rc != 0 {
		t.Fatalf("eval $(make env): rc %d, %v\n%s", rc, err, out)
	}
	start := time.Now()
	for i := 0; i < len(steps); i++ {
		i += l.do(i)
		if l.sh.broken != nil {
			t.Fatalf("%s: cannot go on: %v", l.md, l.sh.broken)
		}
	}
	for _, f := range l.fg {
		t.Errorf("%s:%d: still running at the end of the lab: is a ctrl-c marker missing?", l.md, f.line)
	}
	for _, s := range l.skipped {
		t.Logf("skipped %s", s)
	}
	t.Logf("%s followed in %s", l.md, time.Since(start).Round(time.Second))
}

// do carries out step i, and returns how many of the following steps it
// took care of too (the text block showing its output).
func (l *lab) do(i int) int {
	s := l.steps[i]
	if m, ok := s.marks["skip"]; ok {
		l.skipped = append(l.skipped, fmt.Sprintf("%s:%d (%s): %s\n\t%s", l.md, s.line, s.kind, m.reason, strings.Join(s.body, "\n\t")))
		// The output the lab shows for it goes too.
		n := 0
		for ; i+n+1 < len(l.steps) && showsOutput(l.steps[i+n+1]); n++ {
			l.skipped = append(l.skipped, fmt.Sprintf("%s:%d (text): the output of the block above", l.md, l.steps[i+n+1].line))
		}
		return n
	}
	if s.kind == "sh" || s.kind == "console" {
		// The learner has started every instance of a foreground command
		// before typing on; the next text block is not their output.
		for len(l.next) > 0 {
			l.startNext()
		}
		l.awaiting = nil
	}
	switch s.kind {
	case "ctrl-c":
		l.ctrlC(s)
	case "console":
		l.snapshotLogs()
		for _, c := range commands(s) {
			l.check(s, c, c.shown, errorShown(c.shown))
		}
	case "sh":
		l.snapshotLogs()
		cmds := commands(s)
		for _, c := range cmds[:len(cmds)-1] {
			l.check(s, c, nil, false)
		}
		c := cmds[len(cmds)-1]
		if m, ok := s.marks["foreground"]; ok {
			l.startForeground(s, c, m)
			return 0
		}
		_, fails := s.marks["fails"]
		if out := l.outputOf(i); out != nil {
			l.check(s, c, out.body, fails)
			return 1
		}
		l.check(s, c, nil, fails)
	case "text":
		l.checkText(s)
	}
	return 0
}

// outputOf is the text block that shows what the sh block i printed: the
// next step, when it shows an output.
func (l *lab) outputOf(i int) *step {
	if i+1 < len(l.steps) && l.steps[i].kind == "sh" && showsOutput(l.steps[i+1]) {
		return &l.steps[i+1]
	}
	return nil
}

// showsOutput says whether s is a text block showing the output of the
// block before it (not a log's lines).
func showsOutput(s step) bool {
	_, log := s.marks["log"]
	return s.kind == "text" && !log
}

// errorShown says whether the lab shows a command failing: kubectl's
// errors start so, and so does its word for a write the API server found
// invalid (422): The loggers "heartbeat" is invalid: ... The warnings kubectl
// prints before (a deprecated version's) are passed over.
func errorShown(shown []string) bool {
	for len(shown) > 0 && strings.HasPrefix(shown[0], "Warning: ") {
		shown = shown[1:]
	}
	return len(shown) > 0 && (strings.HasPrefix(shown[0], "Error from server") || strings.HasPrefix(shown[0], "error:") ||
		invalidShown.MatchString(shown[0]))
}

var invalidShown = regexp.MustCompile(`^The \S+ "[^"]+" is invalid: `)

// check runs c; shown is the output the lab shows for it (nil: not
// compared, except in a console block, where no output shown means none).
// Under a retry marker, a command that does not match yet runs again.
func (l *lab) check(s step, c command, shown []string, fails bool) {
	where := fmt.Sprintf("%s:%d: %s", l.md, c.line, c.text)
	_, numbers := s.marks["numbers vary"]
	retry := time.Duration(0)
	if m, ok := s.marks["retry"]; ok {
		var err error
		if retry, err = time.ParseDuration(m.arg); err != nil {
			l.t.Errorf("%s: retry marker: %v", where, err)
		}
	}
	start := time.Now()
	var out, diff string
	var rc, attempt int
	// Without a retry marker (retry 0) the command runs once: the poll
	// always calls its condition first. With one, it runs again every second
	// until its output matches or the marker's time is up.
	var runErr error
	_ = wait.PollUntilContextTimeout(context.Background(), time.Second, retry, true, func(context.Context) (bool, error) {
		attempt++
		if out, rc, runErr = l.sh.run(c.text, 5*time.Minute); runErr != nil {
			return false, runErr
		}
		diff = ""
		if shown != nil || s.kind == "console" {
			diff = compareOutput(shown, strings.Split(out, "\n"), numbers)
		}
		return diff == "" && (rc != 0) == fails, nil
	})
	if runErr != nil {
		l.t.Errorf("%s\n%v; its output so far:\n%s", where, runErr, out)
		return
	}
	l.t.Logf("%s:%d: %s (exit %d, %s, %d attempt(s))", l.md, c.line, firstLine(c.text), rc, time.Since(start).Round(100*time.Millisecond), attempt)
	switch {
	case rc != 0 && !fails:
		l.t.Errorf("%s\nfailed (exit %d); it printed:\n%s", where, rc, out)
	case rc == 0 && fails:
		l.t.Errorf("%s\nsucceeded; the lab says it fails. It printed:\n%s", where, out)
	case diff != "":
		l.t.Errorf("%s\nthe output is not what the lab shows (after %d attempt(s)): %s\n--- the lab shows:\n%s\n--- the real output:\n%s",
			where, attempt, diff, strings.Join(shown, "\n"), out)
	}
}

func firstLine(s string) string {
	first, _, more := strings.Cut(s, "\n")
	if more {
		return first + " ..."
	}
	return first
}

// snapshotLogs notes how long the lab logs are before a block runs, so that
// a log marker after it reads only the lines the block caused.
func (l *lab) snapshotLogs() {
	l.logSize = map[string]int64{}
	logs, _ := filepath.Glob(harness.RepoPath(".state", "logs", "lab-0?-"+docsCluster+".log"))
	for _, f := range logs {
		if fi, err := os.Stat(f); err == nil {
			l.logSize[f] = fi.Size()
		}
	}
}

// checkText checks a text block that no sh block took as its output: lines
// of a log, or what a foreground command printed. Both come in their own
// time, so it waits for them, then compares the lines that must be there.
func (l *lab) checkText(s step) {
	var what, path string
	from := int64(0)
	if m, ok := s.marks["log"]; ok {
		what, path, from = "lines of "+m.arg, harness.RepoPath(m.arg), l.logSize[harness.RepoPath(m.arg)]
	} else {
		f := l.awaiting
		if f == nil && len(l.next) > 0 {
			f = l.startNext() // the next terminal, for the next instance
		}
		if f == nil {
			l.t.Errorf("%s:%d: a text block that shows neither an sh block's output nor a log: mark it (see mark)", l.md, s.line)
			return
		}
		l.awaiting = nil
		what, path = fmt.Sprintf("the output of %q (line %d)", f.cmd, f.line), f.out
	}
	_, numbers := s.marks["numbers vary"]
	var missing []string
	var seen string
	_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		b, _ := os.ReadFile(path)
		if int64(len(b)) < from { // rewritten since: all of it is new
			from = 0
		}
		seen = string(b[from:])
		missing = missingLines(s.body, strings.Split(seen, "\n"), numbers)
		return len(missing) == 0, nil
	})
	if len(missing) > 0 {
		l.t.Errorf("%s:%d: waited 90s for %s to show the lines of this block; missing:\n\t%s\n--- the lab shows:\n%s\n--- last seen (end):\n%s",
			l.md, s.line, what, strings.Join(missing, "\n\t"), strings.Join(s.body, "\n"), lastLines(seen, 40))
	}
}

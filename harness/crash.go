package harness

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A crashed operator ends a wait at once: the process will not do what the
// test waits for any more, or, after a panic it recovered from, most likely
// not; and the panic says why better than a timeout a minute later. Each
// operator counts for the test that started it and the subtests that test
// runs (an e2e-framework feature starts its operator in its Setup step,
// with the feature's t, and waits in its assessments, which are subtests),
// until the test that started it ends.

// running holds the operators whose tests have not ended yet.
var running struct {
	sync.Mutex
	ops map[*Operator]bool
}

func register(o *Operator) {
	running.Lock()
	defer running.Unlock()
	if running.ops == nil {
		running.ops = map[*Operator]bool{}
	}
	running.ops[o] = true
}

func unregister(o *Operator) {
	running.Lock()
	defer running.Unlock()
	delete(running.ops, o)
}

// within reports whether test is starter or one of its subtests.
func within(test, starter string) bool {
	return test == starter || strings.HasPrefix(test, starter+"/")
}

// crashReport is the Crash report of the first operator that t or a test
// t runs within started and that has crashed, or "" when none has.
func crashReport(t testing.TB) string {
	running.Lock()
	var mine []*Operator
	for o := range running.ops {
		if within(t.Name(), o.t.Name()) {
			mine = append(mine, o)
		}
	}
	running.Unlock()
	for _, o := range mine {
		if c := o.Crash(); c != "" {
			return c
		}
	}
	return ""
}

// Crash says how the operator failed on its own, or returns "" if it has
// not. It failed when it panicked, or exited, before the test stopped it
// (Stop, Kill) or said it would end (ExpectExit); from then on nothing
// counts. A panic counts even when the process runs on: controller-runtime
// recovers a panic in Reconcile, logs it and tries the request again, which
// panics again.
// The first line of the report names the panic or the exit; the next ones
// say where it panicked when the trace tells (and, for a panic that was
// caught, whether the process then exited), or how the output ended.
func (o *Operator) Crash() string {
	exited := o.Exited()
	if !exited && o.stopping.Load() || exited && !o.ownExit {
		return ""
	}
	log := o.Log()
	goPanic, caught := firstPanics(log)
	switch {
	case exited && goPanic >= 0:
		// The runtime's own report: "panic: ..." or "fatal error: ...",
		// then the goroutines' stacks.
		lines := strings.Split(log[goPanic:], "\n")
		return "the operator panicked: " + lines[0] + panicSite(lines[1:])
	case caught >= 0:
		line, _, _ := strings.Cut(log[caught:], "\n")
		report := "the operator panicked: panic: " + logField(line, "panic")
		if trace := logField(line, "stacktrace"); trace != "" {
			report += panicSite(strings.Split(trace, "\n"))
		}
		if exited {
			report += fmt.Sprintf("\nand then exited (%s)", o.exitStatus())
		}
		return report
	case exited:
		return fmt.Sprintf("the operator exited by itself (%s), which the test did not ask for; its last lines:\n%s", o.exitStatus(), lastLines(log, 5))
	}
	return ""
}

// exitStatus is how the process ended, once it has.
func (o *Operator) exitStatus() string {
	if o.err == nil {
		return "exit status 0"
	}
	return o.err.Error()
}

// panicSite finds where a Go stack trace panicked and returns it as
// "\nat FILE:LINE (FUNCTION)", FILE relative to the repository when it is
// in it, or "" when it cannot tell. The panicking goroutine comes first.
// Its frames start at the function that panicked, unless the panic went
// through a deferred recover (apimachinery's HandleCrash, controller-runtime's
// Reconcile): then the function that panicked is the frame after the last
// "panic(" frame, which is the runtime raising it. (For a runtime fatal
// error the first frames are the runtime's own, and the site names them.)
func panicSite(trace []string) string {
	var frames []string // function, file, function, file, ...
	in := false
	for _, l := range trace {
		l = strings.TrimSpace(l)
		switch {
		case !in:
			in = strings.HasPrefix(l, "goroutine ")
		case l == "":
			in = false // the end of the first goroutine's stack
		default:
			frames = append(frames, l)
		}
		if !in && len(frames) > 0 {
			break
		}
	}
	at := 0
	for i := 0; i+1 < len(frames); i += 2 {
		if strings.HasPrefix(frames[i], "panic(") {
			at = i + 2
		}
	}
	if at+1 >= len(frames) {
		return ""
	}
	fn, file := frames[at], frames[at+1]
	if i := strings.LastIndex(file, " +0x"); i >= 0 {
		file = file[:i]
	}
	if root, err := RepoRoot(); err == nil {
		file = strings.TrimPrefix(file, root+string(filepath.Separator)) // workspace/04-workqueue/...
	}
	if i := strings.LastIndex(fn, "/"); i >= 0 {
		fn = fn[i+1:] // the package path says nothing the file does not
	}
	if i := strings.LastIndex(fn, "("); i > 0 && strings.HasSuffix(fn, ")") {
		fn = fn[:i] // the arguments, as hex words
	}
	return fmt.Sprintf("\nat %s (%s)", file, fn)
}

// logField reads a string field from a structured log line: zap's console
// or JSON encoding ("panic": "...") or klog's text format (panic="...").
func logField(line, key string) string {
	re := regexp.MustCompile(`(?:"` + key + `":\s*|\b` + key + `=)("(?:[^"\\]|\\.)*")`)
	m := re.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	if s, err := strconv.Unquote(m[1]); err == nil {
		return s
	}
	return m[1]
}

// firstPanics returns where in log the first line of each kind starts, -1
// for none: the Go runtime's report of a panic or fatal error that ends the
// process (it starts the line), and a panic a handler caught and logged
// (observedPanic).
func firstPanics(log string) (goPanic, caught int) {
	goPanic, caught = -1, -1
	for at := 0; at < len(log); {
		line, _, _ := strings.Cut(log[at:], "\n")
		if goPanic < 0 && (strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ")) {
			goPanic = at
		}
		if caught < 0 && strings.Contains(line, observedPanic) {
			caught = at
		}
		at += len(line) + 1
	}
	return goPanic, caught
}

// observedPanic is the message that apimachinery's runtime.PanicHandlers
// log for a panic, with the panic in its "panic" field and the stack in
// "stacktrace". runtime.HandleCrash calls them before it panics again (the
// process then ends with the runtime's own report), and controller-runtime's
// Reconcile when it recovers a panic (the process runs on).
const observedPanic = "Observed a panic"

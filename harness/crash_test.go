package harness

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeMode, in the environment, makes this test binary a fake operator
// instead of running the tests: StartOperator runs os.Args[0] with it.
const fakeMode = "OPERATOR_FLOW_FAKE_OPERATOR"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeMode); mode != "" {
		fakeOperator(mode)
		return
	}
	os.Exit(m.Run())
}

// recoveredLine is what stage 05 logs (zap, development console encoding)
// when controller-runtime recovers a panic in Reconcile: a copy of a real
// line, its stack cut after the frame that panicked.
const recoveredLine = "2026-11-26T10:41:07Z\tERROR\tObserved a panic\t" +
	`{"controller": "logger", "controllerGroup": "example.com", "controllerKind": "Logger", "Logger": {"name":"audit","namespace":"booking-x"}, "namespace": "booking-x", "name": "audit", "reconcileID": "5d1c", ` +
	`"panic": "TODO(lab 5): write LoggerReconciler.Reconcile", "stacktrace": "goroutine 172 [running]:\nk8s.io/apimachinery/pkg/util/runtime.logPanic({0x1f0c9a8, 0xc000b1e6f0}, {0x19a2f40, 0x1eb86a0})\n\t/root/go/pkg/mod/k8s.io/apimachinery@v0.37.2/pkg/util/runtime/runtime.go:134 +0xbc\n` +
	`sigs.k8s.io/controller-runtime/pkg/internal/controller.(*Controller[...]).Reconcile.func1()\n\t/root/go/pkg/mod/sigs.k8s.io/controller-runtime@v0.25.2/pkg/internal/controller/controller.go:203 +0x103\n` +
	`panic({0x19a2f40?, 0x1eb86a0?})\n\t/usr/local/go/src/runtime/panic.go:860 +0x13a\n` +
	`github.com/operator-flow/operator-flow/workspace/05-controller-runtime/internal/controller.(*LoggerReconciler).Reconcile(0xc0004a2b40, {0x1f0c9a8, 0xc000b1e6f0}, {{{0xc000a8c0a0, 0x9}, {0xc000a8c0b0, 0x5}}})\n\t/work/workspace/05-controller-runtime/internal/controller/logger_controller.go:65 +0x25\n"}`

// fakeOperator plays an operator that fails in one way, or runs until it
// is told to stop.
func fakeOperator(mode string) {
	fmt.Println("starting")
	switch mode {
	case "panic":
		panic("TODO(lab 4): write controller.Run")
	case "repanic":
		// What apimachinery's runtime.HandleCrash does in a handler:
		// recover, log, panic again.
		defer func() {
			r := recover()
			fmt.Fprintf(os.Stderr, "E1126 10:41:07.000000 123 runtime.go:142] \"Observed a panic\" panic=%q\n", r)
			panic(r)
		}()
		panic("TODO(lab 3): write handler")
	case "exit":
		fmt.Println("error: the namespace does not exist")
		os.Exit(1)
	case "recovered":
		fmt.Println(recoveredLine)
	}
	// Run until SIGTERM (a clean stop) or SIGUSR1 (an exit of its own, as
	// a leader that lost its Lease).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGUSR1)
	if <-sig == syscall.SIGTERM {
		fmt.Println("shutting down")
		os.Exit(0)
	}
	fmt.Println("leader election lost")
	os.Exit(1)
}

func startFake(t *testing.T, mode string) *Operator {
	t.Helper()
	t.Setenv(fakeMode, mode)
	return StartOperator(t, os.DevNull, os.Args[0])
}

// waitFailure runs a wait that can only end by failing, as test t would,
// and returns its failure message; the wait is given a minute, so a quick
// return means it noticed something.
func waitFailure(t *testing.T, wait func(tb testing.TB)) (msg string, took time.Duration) {
	t.Helper()
	r := &recorder{TB: t}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(r)
	}()
	<-done
	if r.msg == "" {
		t.Fatal("the wait returned without failing")
	}
	return r.msg, time.Since(start)
}

// recorder is t for a wait whose failure is the test's subject: its Fatalf
// records the message and ends the goroutine, as t.Fatalf would.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func never(context.Context) (bool, string, error) { return false, "nothing yet", nil }

func wantLines(t *testing.T, msg string, lines ...string) {
	t.Helper()
	got := strings.Split(msg, "\n")
	for i, want := range lines {
		if i >= len(got) || !strings.Contains(got[i], want) {
			t.Errorf("line %d of the failure should contain %q; the failure:\n%s", i+1, want, msg)
		}
	}
}

func TestWaitFailsAtOnceWhenTheOperatorPanics(t *testing.T) {
	op := startFake(t, "panic")
	msg, took := waitFailure(t, func(tb testing.TB) { Eventually(tb, time.Minute, "ticket x booked", never) })
	wantLines(t, msg,
		"the operator panicked: panic: TODO(lab 4): write controller.Run",
		fmt.Sprintf("at harness/crash_test.go:%d (harness.fakeOperator)", lineOf(t, `panic("TODO(lab 4): write controller.Run")`)),
		"so stopped waiting for ticket x booked after")
	if took > 30*time.Second {
		t.Errorf("the wait took %v to notice the panic", took)
	}
	// WaitForLog's own check of the exit must not hide the panic.
	msg, _ = waitFailure(t, func(tb testing.TB) {
		op.t = tb
		op.WaitForLog(time.Minute, "booked")
	})
	wantLines(t, msg, "the operator panicked: panic: TODO(lab 4): write controller.Run")
}

// A panic in a handler that apimachinery's HandleCrash logs and raises
// again: where it panicked is the frame below the last panic( frame.
func TestWaitFailsAtOnceWhenTheOperatorPanicsAgain(t *testing.T) {
	startFake(t, "repanic")
	msg, _ := waitFailure(t, func(tb testing.TB) { Eventually(tb, time.Minute, "ticket x booked", never) })
	wantLines(t, msg, "the operator panicked: panic: TODO(lab 3): write handler",
		fmt.Sprintf("at harness/crash_test.go:%d (harness.fakeOperator)", lineOf(t, `panic("TODO(lab 3): write handler")`)))
}

func TestWaitFailsAtOnceWhenTheOperatorExitsByItself(t *testing.T) {
	startFake(t, "exit")
	msg, _ := waitFailure(t, func(tb testing.TB) { Eventually(tb, time.Minute, "ticket x booked", never) })
	wantLines(t, msg, "the operator exited by itself (exit status 1)", "starting", "error: the namespace does not exist")
}

// controller-runtime recovers a panic in Reconcile: the process runs on,
// and the wait fails all the same, naming the panic and where it was.
func TestWaitFailsAtOnceOnARecoveredPanic(t *testing.T) {
	op := startFake(t, "recovered")
	msg, _ := waitFailure(t, func(tb testing.TB) { Eventually(tb, time.Minute, "Logger audit Available", never) })
	wantLines(t, msg,
		"the operator panicked: panic: TODO(lab 5): write LoggerReconciler.Reconcile",
		"at /work/workspace/05-controller-runtime/internal/controller/logger_controller.go:65 (controller.(*LoggerReconciler).Reconcile)")
	if op.Exited() {
		t.Errorf("the fake operator exited: %v", op.Log())
	}
}

// An operator started by a test counts in its subtests: e2e-framework runs
// a feature's Setup step with the feature's t, and its assessments as
// subtests of that t.
func TestSubtestsSeeTheParentsCrash(t *testing.T) {
	startFake(t, "panic")
	t.Run("assessment", func(t *testing.T) {
		msg, _ := waitFailure(t, func(tb testing.TB) { Eventually(tb, time.Minute, "ticket x booked", never) })
		wantLines(t, msg, "the operator panicked: panic: TODO(lab 4): write controller.Run")
	})
	for _, c := range []struct {
		test, starter string
		want          bool
	}{
		{"TestA/step", "TestA", true},
		{"TestA", "TestA", true},
		{"TestAB/step", "TestA", false},
		{"TestA", "TestA/step", false},
	} {
		if got := within(c.test, c.starter); got != c.want {
			t.Errorf("within(%q, %q) = %v, want %v", c.test, c.starter, got, c.want)
		}
	}
}

// Stop, Kill and an exit the test announced are no crash; and a wait for an
// exit sees it, announced or not.
func TestExitsTheTestCausedAreNoCrash(t *testing.T) {
	t.Run("Stop", func(t *testing.T) {
		op := startFake(t, "serve")
		op.WaitForLog(time.Minute, "starting")
		if err := op.Stop(); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		assertNoCrash(t, op)
	})
	t.Run("Kill", func(t *testing.T) {
		op := startFake(t, "serve")
		op.Kill()
		assertNoCrash(t, op)
	})
	t.Run("ExpectExit", func(t *testing.T) {
		op := startFake(t, "serve")
		op.WaitForLog(time.Minute, "starting") // its signal handler is set
		op.ExpectExit()
		_ = op.cmd.Process.Signal(syscall.SIGUSR1)
		Eventually(t, time.Minute, "the operator to exit", func(context.Context) (bool, string, error) {
			return op.Exited(), "still running", nil
		})
		assertNoCrash(t, op)
	})
	t.Run("a wait for the exit", func(t *testing.T) {
		op := startFake(t, "serve")
		op.WaitForLog(time.Minute, "starting")
		_ = op.cmd.Process.Signal(syscall.SIGUSR1)
		Eventually(t, time.Minute, "the operator to exit", func(context.Context) (bool, string, error) {
			return op.Exited(), "still running", nil
		})
		if c := op.Crash(); !strings.HasPrefix(c, "the operator exited by itself (exit status 1)") {
			t.Errorf("an exit nobody announced: Crash() = %q", c)
		}
	})
}

// assertNoCrash: op has ended and is no crash, so a wait runs to its
// deadline (a short one here) and says what it waited for.
func assertNoCrash(t *testing.T, op *Operator) {
	t.Helper()
	if !op.Exited() {
		t.Fatal("the operator still runs")
	}
	if c := op.Crash(); c != "" {
		t.Errorf("Crash() = %q, want none", c)
	}
	msg, _ := waitFailure(t, func(tb testing.TB) { Eventually(tb, 300*time.Millisecond, "ticket x booked", never) })
	wantLines(t, msg, "waiting 300ms for ticket x booked")
}

// Only a line that starts with "panic: " is the runtime's report, and only
// the first panic of each kind is kept.
func TestFirstPanics(t *testing.T) {
	out := "10:41:07 starting\n  panic: indented\npanic: TODO(lab 2): write stream.receive\n\ngoroutine 1 [running]:\npanic: a second one\n" + recoveredLine + "\n" + recoveredLine + "\n"
	goPanic, caught := firstPanics(out)
	if want := strings.Index(out, "panic: TODO"); goPanic != want {
		t.Errorf("the Go panic found at %d, want %d", goPanic, want)
	}
	if want := strings.Index(out, "2026-11-26"); caught != want {
		t.Errorf("the recovered panic found at %d, want %d", caught, want)
	}
	if g, c := firstPanics("10:41:07 starting\n"); g != -1 || c != -1 {
		t.Errorf("firstPanics of a log without a panic = %d, %d; want -1, -1", g, c)
	}
}

// logField reads the encodings the stages' loggers write.
func TestLogField(t *testing.T) {
	for line, want := range map[string]string{
		`2026-11-26T10:41:07Z	ERROR	Observed a panic	{"controller": "logger", "panic": "TODO(lab 6): write \"x\""}`: `TODO(lab 6): write "x"`,
		`{"level":"error","msg":"Observed a panic","panic":"boom","stacktrace":"goroutine 1"}`:                      "boom",
		`E1126 10:41:07.000000 123 runtime.go:142] "Observed a panic" panic="TODO(lab 4): write X"`:                 "TODO(lab 4): write X",
		`E1126 10:41:07.000000 123 runtime.go:142] "Observed a panic" panicGoValue="x"`:                             "",
	} {
		if got := logField(line, "panic"); got != want {
			t.Errorf("logField(%q) = %q, want %q", line, got, want)
		}
	}
}

func thisFile(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return file
}

// lineOf is the number of the first line of this file that contains code.
func lineOf(t *testing.T, code string) int {
	t.Helper()
	b, err := os.ReadFile(thisFile(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, code) {
			return i + 1
		}
	}
	t.Fatalf("no line of %s contains %s", thisFile(t), code)
	return 0
}

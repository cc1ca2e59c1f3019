package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// memLimit is the soft memory limit of the GOMEMLIMIT idle run.
const memLimit = "32MiB"

// lowGOGC is the garbage collector's pace in the second booking run; the
// first runs at Go's default, 100. Both are set through the environment,
// as an operator's Deployment would set them: the stage's code sets
// neither.
const lowGOGC = "50"

// memRow is one run of the operator: what it did, how long it took, its
// peak resident memory and the CPU time it used.
type memRow struct {
	what    string
	took    time.Duration
	peakMiB float64
	cpu     time.Duration
}

// memoryRun answers three questions about stage 06 with n FlightTickets: how
// much memory does the operator need with all of them in its cache, how
// much of a cached ticket is metadata.managedFields (which a cache
// transform could drop: docs/memory.md), and how much memory do the Go
// runtime's two knobs, a soft memory limit (GOMEMLIMIT) and the collector's
// pace (GOGC), take off, at what cost in CPU? Both knobs are environment
// variables; the operator runs as built, with its default flags.
//
//	go run ./bench --memory 10000     (what `make bench-memory` runs)
//
// It creates n tickets and lets the operator book them (its peak RSS while
// it works). Then it starts a fresh operator on the booked tickets twice
// (as is, and under GOMEMLIMIT), and takes each one's peak RSS and the
// share of its executable once it has examined every ticket ("in sync") and
// written nothing. Last, it releases the tickets, creates them again and
// has an operator at GOGC=50 book them. Loggers are left out: a handful of
// Deployments would not change the picture.
func (e *benchEnv) memoryRun(st stage, out string) (string, error) {
	if err := e.c.InstallCRDs(e.ctx, st.CRDs); err != nil {
		return "", err
	}
	ns, cleanup, err := e.namespace("bench-memory")
	if err != nil {
		return "", err
	}
	defer cleanup()
	bin, err := e.build(st)
	if err != nil {
		return "", err
	}
	obs, err := observe(e.ctx, e.c.Dynamic, ns)
	if err != nil {
		return "", err
	}
	defer obs.stop()
	args := []string{"--kubeconfig", e.kubeconfig, "--namespace", ns}
	m := &memoryBench{e: e, st: st, bin: bin, ns: ns, obs: obs, args: args}

	// 1. The operator books every ticket, at Go's default GOGC.
	booking, err := m.bookAll(nil, "booking")
	if err != nil {
		return "", err
	}

	// 2. and 3. A fresh operator on the booked tickets: a full cache and
	// nothing to do. As is, and under a soft memory limit for the Go
	// runtime.
	idle := []struct {
		what, log string
		env       []string
	}{
		{"idle", "idle", nil},
		{"idle, GOMEMLIMIT=" + memLimit, "gomemlimit", []string{"GOMEMLIMIT=" + memLimit}},
	}
	var idleRows []memRow
	var binaryMiB float64
	for i, run := range idle {
		what := run.what
		fmt.Fprintf(os.Stderr, ">> memory: %s, %s\n", st.Dir, what)
		log := filepath.Join(e.logs, fmt.Sprintf("%s-memory-%s.log", st.Dir, run.log))
		op, err := startOperatorEnv(run.env, bin, log, args...)
		if err != nil {
			return "", err
		}
		ctx, stop := op.context(e.ctx)
		took, err := waitFor(ctx, time.Now(), 5*time.Minute, "idle pass", func() (bool, string) {
			got := strings.Count(op.log(), "in sync")
			return got >= e.n, fmt.Sprintf(`%d of %d tickets logged "in sync"`, got, e.n)
		})
		stop()
		if err != nil {
			op.stop()
			return "", err
		}
		counts, err := op.counts()
		mib, cpu := op.usage()
		if i == 0 {
			binaryMiB = op.residentFileMiB()
		}
		op.stop()
		if err != nil {
			return "", err
		}
		if w := counts.Sum(isWrite); w != 0 {
			return "", fmt.Errorf("%s: the idle pass wrote %d times; it must write nothing", what, w)
		}
		idleRows = append(idleRows, memRow{what, took, mib, cpu})
	}

	// What managedFields weighs in one ticket, as JSON, for the explanation.
	withMF, withoutMF := ticketSizes(obs)

	// 4. The same booking with the collector at a lower pace, on new
	// tickets: the booked ones go first.
	if err := m.releaseAll(); err != nil {
		return "", err
	}
	lowPace, err := m.bookAll([]string{"GOGC=" + lowGOGC}, "booking-gogc")
	if err != nil {
		return "", err
	}

	// 5. Clean up: the tickets carry the operator's finalizer, so an
	// operator must give their seats back before they (and the namespace)
	// can go.
	if err := m.releaseAll(); err != nil {
		return "", err
	}

	rows := append(append([]memRow{booking}, idleRows...), lowPace)
	var b strings.Builder
	fmt.Fprintf(&b, "### make bench-memory: %s with %d FlightTickets cached\n\n", st.Dir, e.n)
	fmt.Fprintf(&b, "Measured %s on %s/%s with %d cores.\n\n", time.Now().UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	b.WriteString("| run | time | operator peak RSS | operator CPU |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.1f s | %.0f MiB | %.1f s |\n", r.what, r.took.Seconds(), r.peakMiB, r.cpu.Seconds())
	}
	fmt.Fprintf(&b, "\nOf the idle run's resident memory, **%.0f MiB** are the operator's own executable (RssFile at the end of the pass: code and read-only data, paged in from the binary, the same with one ticket or %d); the rest is the Go runtime's: the heap, which the garbage collector lets grow by GOGC percent (100 unless the environment says otherwise) past what is live, stacks and bookkeeping. GOMEMLIMIT=%s asks the collector to keep the runtime's memory under that soft limit by collecting more often: CPU for memory. A Deployment sets it from its container's memory limit (config/manager/manager.yaml).\n", binaryMiB, e.n, memLimit)
	fmt.Fprintf(&b, "\nOne booked ticket is %d bytes of JSON, %d of them metadata.managedFields: the record of which client set which field, for server-side apply, which the operator never reads and its cache keeps for every ticket (docs/memory.md shows the cache option that drops it).\n",
		withMF, withMF-withoutMF)
	fmt.Fprintf(&b, "\nThe collector's pace: at GOGC=%s the booking peaked at **%.0f MiB** instead of %.0f at Go's default of 100; its CPU time changed by **%s** (%.1f s against %.1f s) and its time by %s.\n",
		lowGOGC, lowPace.peakMiB, booking.peakMiB, change(lowPace.cpu, booking.cpu), lowPace.cpu.Seconds(), booking.cpu.Seconds(), change(lowPace.took, booking.took))
	b.WriteString("\n*Time*: booking, from the operator's start until every ticket shows its booking; idle, from the start until it has examined every ticket and found it in sync. *Peak RSS*: VmHWM of the process. *CPU*: user and system time of the process over the run.\n")
	report := b.String()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	return report, os.WriteFile(filepath.Join(out, "memory.md"), []byte(report), 0o644)
}

// change is how much a differs from b, as a signed whole percentage: "+16%",
// "-3%", and "+0%" for less than half a percent either way.
func change(a, b time.Duration) string {
	pct := math.Round(100 * (a.Seconds()/b.Seconds() - 1))
	if pct == 0 {
		pct = 0 // not "-0"
	}
	return fmt.Sprintf("%+.0f%%", pct)
}

// memoryBench is what the runs of memoryRun share: the stage, its
// operator's binary, the namespace of the tickets, an observer of them and
// the operator's flags.
type memoryBench struct {
	e    *benchEnv
	st   stage
	bin  string
	ns   string
	obs  *observer
	args []string
}

// bookAll creates n new tickets and starts the operator, with env added to
// its environment, to book them: the run's time, peak RSS and CPU.
func (m *memoryBench) bookAll(env []string, log string) (memRow, error) {
	e, st := m.e, m.st
	what := fmt.Sprintf("booking %d new tickets", e.n)
	if len(env) > 0 {
		what += ", " + strings.Join(env, " ")
	}
	fmt.Fprintf(os.Stderr, ">> memory: creating %d FlightTickets in %s\n", e.n, m.ns)
	if err := createAll(e.ctx, e.c.Dynamic, m.ns, e.n, 0); err != nil {
		return memRow{}, err
	}
	fmt.Fprintf(os.Stderr, ">> memory: %s, %s\n", st.Dir, what)
	op, err := startOperatorEnv(env, m.bin, filepath.Join(e.logs, fmt.Sprintf("%s-memory-%s.log", st.Dir, log)), m.args...)
	if err != nil {
		return memRow{}, err
	}
	ctx, stop := op.context(e.ctx)
	took, err := waitFor(ctx, time.Now(), 20*time.Minute, "booking", func() (bool, string) {
		d := m.obs.ticketsDone(seatsBefore)
		return d == e.n, fmt.Sprintf("%d/%d tickets booked", d, e.n)
	})
	stop()
	mib, cpu := op.usage()
	op.stop()
	if err != nil {
		return memRow{}, fmt.Errorf("%w\nlast operator output:\n%s", err, tail(op.log(), 15))
	}
	return memRow{what, took, mib, cpu}, nil
}

// releaseAll deletes every ticket and runs an operator until all are gone:
// each carries the operator's finalizer, so the operator must give its
// seats back first. Not measured; more workers make it quick.
func (m *memoryBench) releaseAll() error {
	e := m.e
	fmt.Fprintf(os.Stderr, ">> memory: deleting the tickets (an operator releases their seats)\n")
	op, err := startOperator(m.bin, filepath.Join(e.logs, m.st.Dir+"-memory-cleanup.log"),
		append(m.args, "--workers", "8")...)
	if err != nil {
		return err
	}
	defer op.stop()
	if err := deleteAll(e.ctx, e.c.Dynamic, m.ns, e.n, 0); err != nil {
		return err
	}
	ctx, stop := op.context(e.ctx)
	defer stop()
	_, err = waitFor(ctx, time.Now(), 20*time.Minute, "deletion", func() (bool, string) {
		left := len(m.obs.tickets.ListKeys())
		return left == 0, fmt.Sprintf("%d tickets left", left)
	})
	return err
}

// ticketSizes returns the JSON size of one cached ticket with and without
// its managedFields.
func ticketSizes(obs *observer) (with, without int) {
	items := obs.tickets.List()
	if len(items) == 0 {
		return 0, 0
	}
	u := items[0].(*unstructured.Unstructured).DeepCopy()
	b, _ := json.Marshal(u.Object)
	u.SetManagedFields(nil)
	c, _ := json.Marshal(u.Object)
	return len(b), len(c)
}

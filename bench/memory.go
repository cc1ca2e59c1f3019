package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// memLimit is the soft memory limit of the GOMEMLIMIT idle run.
const memLimit = "32MiB"

// memoryRun answers three questions about stage 06 with n FlightTickets:
// how much memory does the operator need with all of them in its cache, how
// much of that is metadata.managedFields, which it strips from the cache
// (--strip-managed-fields, on by default), and how much a soft memory limit
// for the Go runtime (GOMEMLIMIT) takes off?
//
//	go run ./bench --memory 10000     (what `make bench-memory` runs)
//
// It creates n tickets, lets the operator book them (its peak RSS while it
// works), then starts a fresh operator on the booked tickets three times
// (with stripping, without, and with stripping under GOMEMLIMIT), and takes
// each one's peak RSS and the share of its executable once it has examined every
// ticket ("in sync") and written nothing. Loggers are left out: a handful of
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

	fmt.Fprintf(os.Stderr, ">> memory: creating %d FlightTickets in %s\n", e.n, ns)
	if err := createAll(e.ctx, e.c.Dynamic, ns, e.n, 0); err != nil {
		return "", err
	}

	type row struct {
		what    string
		took    time.Duration
		peakMiB float64
	}
	var rows []row

	// 1. The operator books every ticket, with its default flags.
	fmt.Fprintf(os.Stderr, ">> memory: %s books them (default flags)\n", st.Dir)
	op, err := startOperator(bin, filepath.Join(e.logs, st.Dir+"-memory-booking.log"), args...)
	if err != nil {
		return "", err
	}
	start := time.Now()
	ctx, stop := op.context(e.ctx)
	took, err := waitFor(ctx, start, 20*time.Minute, "booking", func() (bool, string) {
		d := obs.ticketsDone(seatsBefore)
		return d == e.n, fmt.Sprintf("%d/%d tickets booked", d, e.n)
	})
	stop()
	mib, _ := op.usage()
	op.stop()
	if err != nil {
		return "", fmt.Errorf("%w\nlast operator output:\n%s", err, tail(op.log(), 15))
	}
	rows = append(rows, row{fmt.Sprintf("booking %d new tickets", e.n), took, mib})

	// 2. to 4. A fresh operator on the booked tickets: a full cache and
	// nothing to do. With stripping (the default), without, and with the
	// default flags under a soft memory limit for the Go runtime.
	idle := []struct {
		what, log string
		env       []string
		flags     []string
	}{
		{"idle, managedFields stripped (default)", "strip-true", nil, nil},
		{"idle, --strip-managed-fields=false", "strip-false", nil, []string{"--strip-managed-fields=false"}},
		{"idle, managedFields stripped, GOMEMLIMIT=" + memLimit, "gomemlimit", []string{"GOMEMLIMIT=" + memLimit}, nil},
	}
	var binaryMiB float64
	for i, run := range idle {
		what := run.what
		fmt.Fprintf(os.Stderr, ">> memory: %s, %s\n", st.Dir, what)
		log := filepath.Join(e.logs, fmt.Sprintf("%s-memory-%s.log", st.Dir, run.log))
		op, err := startOperatorEnv(run.env, bin, log, append(args, run.flags...)...)
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
		mib, _ := op.usage()
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
		rows = append(rows, row{what, took, mib})
	}

	// What managedFields weighs in one ticket, as JSON, for the explanation.
	withMF, withoutMF := ticketSizes(obs)

	// 4. Clean up: the tickets carry the operator's finalizer, so an
	// operator must give their seats back before they (and the namespace)
	// can go. Not measured; a higher client rate makes it quick.
	fmt.Fprintf(os.Stderr, ">> memory: deleting the tickets (an operator releases their seats)\n")
	op, err = startOperator(bin, filepath.Join(e.logs, st.Dir+"-memory-cleanup.log"),
		append(args, "--kube-api-qps", "1000", "--kube-api-burst", "2000", "--workers", "8")...)
	if err != nil {
		return "", err
	}
	defer op.stop()
	if err := deleteAll(e.ctx, e.c.Dynamic, ns, e.n, 0); err != nil {
		return "", err
	}
	ctx, stop = op.context(e.ctx)
	defer stop()
	if _, err := waitFor(ctx, time.Now(), 20*time.Minute, "deletion", func() (bool, string) {
		left := len(obs.tickets.ListKeys())
		return left == 0, fmt.Sprintf("%d tickets left", left)
	}); err != nil {
		return "", err
	}

	var b strings.Builder
	fmt.Fprintf(&b, "### make bench-memory: %s with %d FlightTickets cached\n\n", st.Dir, e.n)
	fmt.Fprintf(&b, "Measured %s on %s/%s with %d cores.\n\n", time.Now().UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	b.WriteString("| run | time | operator peak RSS |\n|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.1f s | %.0f MiB |\n", r.what, r.took.Seconds(), r.peakMiB)
	}
	fmt.Fprintf(&b, "\nOf the default idle run's resident memory, **%.0f MiB** are the operator's own executable (RssFile at the end of the pass: code and read-only data, paged in from the binary, the same with one ticket or 10000); the rest is the Go runtime's: the heap, which the garbage collector lets grow to twice what is live (GOGC=100), stacks and bookkeeping. GOMEMLIMIT=%s asks the collector to keep the runtime's memory under that soft limit by collecting more often: CPU for memory. A Deployment sets it from its container's memory limit (config/manager/manager.yaml).\n", binaryMiB, memLimit)
	saved := rows[2].peakMiB - rows[1].peakMiB
	fmt.Fprintf(&b, "\nStripping managedFields saves **%.0f MiB** of peak RSS with %d tickets cached (%.0f%% of the unstripped peak). ",
		saved, e.n, 100*saved/rows[2].peakMiB)
	fmt.Fprintf(&b, "One booked ticket is %d bytes of JSON, %d of them managedFields: the record of which client set which field, for server-side apply, which the operator never reads.\n",
		withMF, withMF-withoutMF)
	b.WriteString("\n*Time*: booking, from the operator's start until every ticket shows its booking; idle, from the start until it has examined every ticket and found it in sync. *Peak RSS*: VmHWM of the process.\n")
	report := b.String()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	return report, os.WriteFile(filepath.Join(out, "memory.md"), []byte(report), 0o644)
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

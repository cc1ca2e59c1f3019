package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operator-flow/operator-flow/harness"
)

// stage is one operator folder to measure.
type stage struct {
	Dir  string // e.g. "03-informer-cache"
	CRDs string // folder of the CRDs it runs with
	// SeatLedger: the stage books seats in a ledger outside the ticket's
	// namespace, guarded by a finalizer, and leaves Deployments to the
	// garbage collector (stage 06). Its lower bound has those writes too.
	SeatLedger bool
	// Manager: a controller-runtime stage (05, 06), whose Manager serves
	// metrics and health probes on fixed default ports.
	Manager bool
}

// stages finds the operator stages among numbers like "2,3,4".
func stages(root string, numbers []string) ([]stage, error) {
	var out []stage
	for _, n := range numbers {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		matches, _ := filepath.Glob(filepath.Join(root, fmt.Sprintf("%02s-*", strings.TrimLeft(n, "0"))))
		if len(matches) == 0 {
			matches, _ = filepath.Glob(filepath.Join(root, "0"+strings.TrimLeft(n, "0")+"-*"))
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("there is no stage %s", n)
		}
		dir := filepath.Base(matches[0])
		if _, err := os.Stat(filepath.Join(root, dir, "main.go")); err != nil {
			return nil, fmt.Errorf("stage %s has no operator to measure", dir)
		}
		crds, manager := filepath.Join(root, "01-crd-yaml", "crds"), false
		if _, err := os.Stat(filepath.Join(root, dir, "config", "crd")); err == nil {
			crds, manager = filepath.Join(root, dir, "config", "crd"), true
		}
		_, ledgerErr := os.Stat(filepath.Join(root, dir, "internal", "controller", "seat_ledger.go"))
		out = append(out, stage{Dir: dir, CRDs: crds, SeatLedger: ledgerErr == nil, Manager: manager})
	}
	return out, nil
}

// PhaseResult is what one phase of the workload cost a stage.
type PhaseResult struct {
	Name                   string
	Tickets, Loggers, Both time.Duration // time to converge, from the first request
	// LoggersOperator: until the operator's own part of the Loggers' work
	// is done: every Deployment asks for the phase's spec, and every Logger
	// has a status. The rest of Loggers, the rollout, is the cluster's.
	LoggersOperator time.Duration
	// Unfinished explains why the phase's times stop before all of the
	// operator's work was done (its writes include that work).
	Unfinished       string
	Server, Operator Requests // requests seen by the API server / sent by the operator
	Bound            int      // the fewest writes any operator needs for this phase
}

// StageResult is one stage's row in the report.
type StageResult struct {
	Stage      string
	Phases     []PhaseResult
	IdleWrites int // writes during a full pass over converged objects; -1 if not measured
	// IdleChanged: objects of the workload that changed during that pass:
	// tickets, Loggers and ConfigMaps with a new resourceVersion,
	// Deployments with a new generation (see versions). It is the API
	// server's side of IdleWrites, independent of the operator's own count.
	IdleChanged int
	IdleNote    string
	PeakMiB     float64
	CPU         time.Duration
	// TicketFloor is the stage's own ticket floor, measured when its lower
	// bound has more writes per ticket than the common floor makes (stage
	// 06); 0 means the common floor applies.
	TicketFloor time.Duration
}

// createRatios divides the create phase's ticket and Logger times by the
// common floors.
func (r StageResult) createRatios(f floors) (tickets, loggers float64) {
	c := r.phase("create")
	return ratio(c.Tickets, f.Tickets), ratio(c.Loggers, f.Loggers)
}

type benchEnv struct {
	ctx        context.Context
	c          *harness.Clients
	kubeconfig string
	root       string
	logs       string
	n, m       int
}

// namespace creates a fresh namespace for one measurement. Its cleanup
// deletes the namespace and waits until it is gone: the namespace controller
// deletes what is left in it (a floor's tickets and seat holds, a stage's
// Events) one collection at a time, and that work would otherwise run on the
// same two cores as the next measurement.
func (e *benchEnv) namespace(name string) (string, func(), error) {
	ns, err := e.c.Kube.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", nil, err
	}
	return ns.Name, func() { e.deleteNamespace(ns.Name) }, nil
}

// deleteNamespace deletes a namespace and waits up to namespaceTimeout for it
// to be gone. It only warns when the wait fails: the measurement it belonged
// to is complete, and the next one says so if it suffers.
func (e *benchEnv) deleteNamespace(ns string) {
	start := time.Now()
	// The delete is sent also when the bench was interrupted; the wait is
	// not, so that Ctrl-C ends the bench at once.
	if err := e.c.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
		if !apierrors.IsNotFound(err) {
			fmt.Fprintf(os.Stderr, ">> warning: deleting namespace %s: %v\n", ns, err)
		}
		return
	}
	err := wait.PollUntilContextTimeout(e.ctx, 250*time.Millisecond, namespaceTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := e.c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil && e.ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, ">> warning: namespace %s is still terminating after %s; the next measurement shares the machine with its deletion (kubectl get namespace %s -o yaml says what is left)\n", ns, namespaceTimeout, ns)
		return
	}
	if err != nil {
		return // interrupted
	}
	fmt.Fprintf(os.Stderr, ">> namespace %s deleted in %.1fs\n", ns, time.Since(start).Seconds())
}

// namespaceTimeout bounds the wait for a namespace to be deleted.
const namespaceTimeout = 3 * time.Minute

// build compiles the stage's operator into .state/bench as the images of 05
// and 06 are built (their Dockerfiles): static, without cgo, and without the
// symbol table and debug information, so that the memory measured is that of
// the binary a pod would run. (A cgo build maps libc too: about 1 MiB more
// resident.)
func (e *benchEnv) build(st stage) (string, error) {
	bin := filepath.Join(e.logs, "operator-"+st.Dir[:2])
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./"+st.Dir)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Dir = e.root
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", st.Dir, err, out)
	}
	return bin, nil
}

// run measures one stage: build and start its operator, then create, check an
// idle pass, edit and delete.
func (e *benchEnv) run(st stage) (StageResult, error) {
	res := StageResult{Stage: st.Dir, IdleWrites: -1}
	if err := e.c.InstallCRDs(e.ctx, st.CRDs); err != nil {
		return res, err
	}
	if st.SeatLedger {
		fmt.Fprintf(os.Stderr, ">> %s: its own floor: %d tickets, each booked with a finalizer, a seat hold, a status write and a Booked Event, and %d Deployments, at once\n", st.Dir, e.n, e.m)
		floor, err := e.measure(true)
		if err != nil {
			return res, fmt.Errorf("%s: ticket floor: %w", st.Dir, err)
		}
		res.TicketFloor = floor.Tickets
		fmt.Fprintf(os.Stderr, ">> %s: ticket floor %.1fs\n", st.Dir, floor.Tickets.Seconds())
	}
	ns, cleanup, err := e.namespace("bench-" + st.Dir[:2])
	if err != nil {
		return res, err
	}
	defer cleanup()

	bin, err := e.build(st)
	if err != nil {
		return res, err
	}
	args := []string{"--kubeconfig", e.kubeconfig, "--namespace", ns}
	if st.Manager {
		// The endpoints keep running, as in a pod, on ports the kernel
		// picks: the default ones may be taken by a lab's operator or
		// another bench on the same machine.
		args = append(args, "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0")
	}
	op, err := startOperator(bin, filepath.Join(e.logs, st.Dir+".log"), args...)
	if err != nil {
		return res, err
	}
	defer func() { op.stop() }()

	obs, err := observe(e.ctx, e.c.Dynamic, ns)
	if err != nil {
		return res, err
	}
	defer obs.stop()

	bound := writeBound(st, e.n, e.m)
	phases := []struct {
		name    string
		act     func() error
		bound   int
		ticket  func() (bool, string)
		logger  func() (bool, string)
		ownPart func() (bool, string)
	}{
		{"create", func() error { return createAll(e.ctx, e.c.Dynamic, ns, e.n, e.m) }, bound.create,
			func() (bool, string) {
				d := obs.ticketsDone(seatsBefore)
				return d == e.n, fmt.Sprintf("%d/%d tickets booked", d, e.n)
			},
			func() (bool, string) {
				d := obs.loggersDone(intervalBefore)
				return d == e.m, fmt.Sprintf("%d/%d Loggers available", d, e.m)
			},
			func() (bool, string) {
				d := obs.loggersWritten(intervalBefore)
				return d == e.m, fmt.Sprintf("%d/%d Deployments created and Logger statuses written", d, e.m)
			}},
		{"edit", func() error { return editAll(e.ctx, e.c.Dynamic, ns, e.n, e.m) }, bound.edit,
			func() (bool, string) {
				d := obs.ticketsDone(seatsAfter)
				return d == e.n, fmt.Sprintf("%d/%d tickets rebooked", d, e.n)
			},
			func() (bool, string) {
				d := obs.loggersDone(intervalAfter)
				return d == e.m, fmt.Sprintf("%d/%d Loggers rolled out", d, e.m)
			},
			func() (bool, string) {
				d := obs.loggersWritten(intervalAfter)
				return d == e.m, fmt.Sprintf("%d/%d Deployments updated", d, e.m)
			}},
		{"delete", func() error { return deleteAll(e.ctx, e.c.Dynamic, ns, e.n, e.m) }, bound.delete,
			func() (bool, string) {
				n := len(obs.tickets.ListKeys())
				return n == 0, fmt.Sprintf("%d tickets left", n)
			},
			func() (bool, string) {
				l, d := len(obs.loggers.ListKeys()), len(obs.deployments.ListKeys())
				return l == 0 && d == 0, fmt.Sprintf("%d Loggers and %d Deployments left", l, d)
			},
			func() (bool, string) {
				l, d := len(obs.loggers.ListKeys()), len(obs.deployments.ListKeys())
				return l == 0 && d == 0, fmt.Sprintf("%d Loggers and %d Deployments left", l, d)
			}},
	}
	for _, ph := range phases {
		if ph.name == "delete" {
			// Between edit and delete: restart the operator and count what a
			// pass over converged objects costs it.
			if op, err = e.idlePass(&res, op, bin, st, ns, args); err != nil {
				return res, err
			}
		}
		r, err := e.phase(op, ph.name, ph.bound, ph.act, ph.ticket, ph.logger, ph.ownPart)
		if err != nil {
			return res, fmt.Errorf("%s, phase %s: %w\nlast operator output:\n%s", st.Dir, ph.name, err, tail(op.log(), 15))
		}
		res.Phases = append(res.Phases, r)
		fmt.Fprintf(os.Stderr, ">> %s %-6s tickets %6.1fs  loggers %6.1fs  operator writes %5d (bound %d)\n",
			st.Dir, ph.name, r.Tickets.Seconds(), r.Loggers.Seconds(), r.Operator.Sum(isWrite), r.Bound)
	}
	mib, cpu := op.usage()
	res.PeakMiB = max(res.PeakMiB, mib)
	res.CPU += cpu
	return res, nil
}

// phase runs one step of the workload and measures it.
func (e *benchEnv) phase(op *operator, name string, bound int, act func() error, ticketsDone, loggersDone, ownPartDone func() (bool, string)) (PhaseResult, error) {
	r := PhaseResult{Name: name, Bound: bound}
	srvBefore, err := serverRequests(e.ctx, e.c.Kube)
	if err != nil {
		return r, err
	}
	// The create phase includes the operator's start-up: its first LISTs
	// and WATCHes belong to the workload's bill, so it counts from zero
	// (and the operator, just started, is not asked: see counts).
	opBefore := Requests{}
	if name != "create" {
		if opBefore, err = op.counts(); err != nil {
			return r, err
		}
	}
	start := time.Now()
	if err := act(); err != nil {
		return r, err
	}
	ctx, stop := op.context(e.ctx)
	defer stop()
	took, err := waitEach(ctx, start, 10*time.Minute,
		condition{"tickets", ticketsDone}, condition{"Loggers", loggersDone}, condition{"Loggers, the operator's part", ownPartDone})
	if err != nil {
		return r, err
	}
	r.Tickets, r.Loggers, r.LoggersOperator = took[0], took[1], took[2]
	r.Both = max(r.Tickets, r.Loggers)
	// The operator first, then the server: every request the operator
	// counted is then in the server's count too (which the bench's e2e
	// test checks).
	opAfter, err := op.counts()
	if err != nil {
		return r, err
	}
	srvAfter, err := serverRequests(e.ctx, e.c.Kube)
	if err != nil {
		return r, err
	}
	r.Server, r.Operator = srvAfter.Sub(srvBefore), opAfter.Sub(opBefore)
	return r, nil
}

// phaseBounds are the fewest writes any operator with a stage's behaviour
// needs, per phase.
type phaseBounds struct{ create, edit, delete int }

// writeBound derives the lower bound of writes for n tickets and m Loggers.
// Every stage: a status write per ticket and, per Logger, a Deployment
// create and a status write (create); a status write per ticket and a
// Deployment update per Logger (edit); a Deployment delete per Logger
// (delete). A stage with a seat ledger also adds the finalizer and applies
// the hold on create, updates the hold on edit, and on delete deletes the
// hold and removes the finalizer, while the garbage collector, not the
// operator, deletes the Deployments.
func writeBound(st stage, n, m int) phaseBounds {
	b := phaseBounds{create: n + 2*m, edit: n + m, delete: m}
	if st.SeatLedger {
		b.create += 2 * n
		b.edit += n
		b.delete = 2 * n
	}
	return b
}

// idlePass stops the operator and starts a new one on the converged objects.
// The new one must look at every object (operators log "in sync" for each
// object they examined and left alone) and write nothing.
func (e *benchEnv) idlePass(res *StageResult, op *operator, bin string, st stage, ns string, args []string) (*operator, error) {
	mib, cpu := op.usage()
	res.PeakMiB, res.CPU = max(res.PeakMiB, mib), res.CPU+cpu
	op.stop()
	// A first restart may find a write its predecessor had not made yet
	// (stage 06's Logger conditions keep moving for a moment after the
	// Deployment is rolled out; a status-only change brings no second
	// reconcile, so that object logs no "in sync"). That is unfinished
	// work, not an idle pass: it is reported, and a second restart measures
	// the idle pass.
	want := e.n + e.m
	firstWrites := -1
	for attempt := 1; ; attempt++ {
		before, err := e.versions(ns)
		if err != nil {
			return nil, err
		}
		op, err = startOperator(bin, filepath.Join(e.logs, fmt.Sprintf("%s-idle-%d.log", st.Dir, attempt)), args...)
		if err != nil {
			return nil, err
		}
		timeout := 2 * time.Minute
		if attempt == 1 {
			timeout = 30 * time.Second
		}
		ctx, stop := op.context(e.ctx)
		_, waitErr := waitFor(ctx, time.Now(), timeout, "idle pass", func() (bool, string) {
			got := strings.Count(op.log(), "in sync")
			return got >= want, fmt.Sprintf(`%d of %d objects logged "in sync"`, got, want)
		})
		stop()
		counts, err := op.counts()
		if err != nil {
			return op, err
		}
		switch {
		case waitErr == nil:
			res.IdleWrites = counts.Sum(isWrite)
			after, err := e.versions(ns)
			if err != nil {
				return op, err
			}
			res.IdleChanged = 0
			for k, v := range after {
				if before[k] != v {
					res.IdleChanged++
				}
			}
			if firstWrites >= 0 {
				res.IdleNote = fmt.Sprintf("measured on a second restart: the first made %d writes its predecessor had left to do, and so did not log \"in sync\" for every object", firstWrites)
			}
			return op, nil
		case attempt == 2:
			res.IdleNote = waitErr.Error()
			return op, nil
		}
		// Work the edit phase left undone: its writes belong to that
		// phase, whose time stopped before they were made.
		firstWrites = counts.Sum(isWrite)
		if edit := len(res.Phases) - 1; firstWrites > 0 && edit >= 0 {
			for k, v := range counts {
				if k.IsWrite() {
					res.Phases[edit].Operator[k] += v
				}
			}
			res.Phases[edit].Unfinished = fmt.Sprintf("a restart after this phase found %d writes left to do; they are counted in this phase, whose time stops before they were made", firstWrites)
		}
		op.stop()
	}
}

// versions maps every ticket, Logger, Deployment and ConfigMap in ns to a
// mark that any write by the operator changes: the resourceVersion, and for
// a Deployment its generation, which only a change of its spec raises.
// (kube-controller-manager keeps writing a Deployment's status for a while
// after a rollout, which changes its resourceVersion but is not the
// operator's doing.)
func (e *benchEnv) versions(ns string) (map[string]string, error) {
	out := map[string]string{}
	for _, gvr := range []schema.GroupVersionResource{ticketsGVR, loggersGVR, deploymentsGVR, configMapsGVR} {
		list, err := e.c.Dynamic.Resource(gvr).Namespace(ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing %s in %s: %w", gvr.Resource, ns, err)
		}
		for _, u := range list.Items {
			mark := u.GetResourceVersion()
			if gvr == deploymentsGVR {
				mark = fmt.Sprint(u.GetGeneration())
			}
			out[gvr.Resource+"/"+u.GetName()] = mark
		}
	}
	return out, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

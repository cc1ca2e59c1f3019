package behaviour

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// killedMidBatch: scale tickets and scale Loggers are created at once, and the
// operator is SIGKILLed three times while they converge (at a quarter, half
// and three quarters of the way), each time replaced by a fresh process. A
// crash loses whatever was in memory (queues, caches), so this proves that
// everything the operator needs is in the cluster, and that redoing work is
// harmless: in the end each Logger has exactly one Deployment, and for an
// operator with seat holds (stage 06) each ticket has exactly one hold with
// its seats, its finalizer, and at most one Booked Event.
//
// A kill proves nothing once the batch has converged, so the operator talks
// to the API server through the test's proxy, which holds each of its writes
// for killWriteDelay: the batch then takes seconds on any machine, and each
// kill is checked to have landed after the process it killed had written
// something.
//
// A crash is not a clean stop either: a write the dying process had sent can
// still run after the next process started (see apiProxy.zombie). So each
// kill lands while the proxy holds one chosen write of the process (a trap),
// and that write is let through only after the next process has done the
// work it could undo. Stage 06 is killed during a seat-hold write and during
// a release, the writes of its own that a late arrival could turn into a
// stray hold, or, without the delete's UID precondition, a lost one (killDuringHold, killDuringRelease); the other stages, and
// 06's first kill, during whatever write to an object comes next
// (killMidCreate).
func killedMidBatch(s Stage, scale int) features.Feature {
	var k *killRun
	kills := []func(*testing.T, *killRun, int){killMidCreate, killMidCreate, killMidCreate}
	if s.TicketFinalizer {
		kills = []func(*testing.T, *killRun, int){killMidCreate, killDuringHold, killDuringRelease}
	}
	return features.New(fmt.Sprintf("killed 3 times while %d tickets and %d Loggers converge", scale, scale)).
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f := newFixture(t, cfg, s, "kill")
			p := newAPIProxy(t, operatorIdentity(t, f))
			p.slow = func(r *http.Request) bool { return isWrite(r.Method) }
			p.slowBy = killWriteDelay
			p.zombie = true
			f.Kubeconfig = p.kubeconfig
			k = &killRun{f: f, p: p, tickets: scale, loggers: scale}
			k.restart(t)
			return ctx
		}).
		Assess("every kill lands with a write in flight, which lands after the next process started; every object converges exactly once", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f := k.f
			batch := []object{}
			for i := 0; i < scale; i++ {
				batch = append(batch,
					object{ticketGVR, newTicket(fmt.Sprintf("t-%03d", i), "Oslo", "Bergen", int64(1+i%10))},
					object{loggerGVR, newLogger(fmt.Sprintf("l-%03d", i), "batch", 5, 1)})
			}
			createAll(t, f, batch)
			for i, kill := range kills {
				kill(t, k, max((i+1)*k.total()/4, k.last+1))
			}
			harness.Eventually(t, 3*converge, "every object converged", func(ctx context.Context) (bool, string, error) {
				done, err := f.progress(ctx)
				return done == k.total(), fmt.Sprintf("%d of %d converged", done, k.total()), err
			})
			harness.Eventually(t, converge, "every Logger Available", func(ctx context.Context) (bool, string, error) {
				avail, err := f.countLoggers(ctx, stateAvailable)
				return avail == k.loggers, fmt.Sprintf("%d of %d Available", avail, k.loggers), err
			})
			deps, err := f.C.Kube.AppsV1().Deployments(f.NS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=logger"})
			if err != nil {
				t.Fatal(err)
			}
			perLogger := map[string]int{}
			for _, d := range deps.Items {
				perLogger[d.Labels["app.kubernetes.io/instance"]]++
			}
			if len(deps.Items) != k.loggers || len(perLogger) != k.loggers {
				t.Errorf("%d Deployments for %d Loggers (%d distinct), want exactly one each", len(deps.Items), k.loggers, len(perLogger))
			}
			if s.TicketFinalizer {
				f.checkSeatHolds(t, k.tickets)
				f.checkBookedEvents(t)
			}
			return ctx
		}).
		Assess("deleting everything leaves no seat hold behind", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !s.TicketFinalizer {
				return ctx
			}
			f := k.f
			// The last operator ended with the step before (an operator
			// lives as long as the step that started it).
			f.start(t)
			for _, gvr := range []schema.GroupVersionResource{ticketGVR, loggerGVR} {
				if err := f.C.Dynamic.Resource(gvr).Namespace(f.NS).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
					t.Fatalf("deleting every %s: %v", gvr.Resource, err)
				}
			}
			harness.Eventually(t, 2*converge, "every ticket released and every seat hold gone", func(ctx context.Context) (bool, string, error) {
				tickets, err := f.C.Dynamic.Resource(ticketGVR).Namespace(f.NS).List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, "", err
				}
				holds, err := f.seatHolds(ctx)
				if err != nil {
					return false, "", err
				}
				return len(tickets.Items) == 0 && len(holds) == 0, fmt.Sprintf("%d tickets, %d seat holds left", len(tickets.Items), len(holds)), nil
			})
			return ctx
		}).Feature()
}

// killWriteDelay is how long the proxy holds each write of the operator in
// killedMidBatch. With two workers per kind and one to three writes per
// object, 30 tickets and 30 Loggers then take several seconds, so a kill
// lands mid-batch even when the API server answers in a millisecond.
const killWriteDelay = 100 * time.Millisecond

// killRun is the state of killedMidBatch between its kills.
type killRun struct {
	f                *fixture
	p                *apiProxy
	tickets, loggers int       // how many the batch holds now
	last             int       // objects converged at the kill before
	kills            int       // so far
	started          time.Time // when the running operator was started
}

func (k *killRun) total() int { return k.tickets + k.loggers }

// restart starts a fresh operator, after a kill or as the first.
func (k *killRun) restart(t *testing.T) {
	t.Helper()
	k.started = time.Now()
	k.f.start(t)
}

// waitProgress waits until target objects have converged and the running
// operator has had a write accepted.
func (k *killRun) waitProgress(t *testing.T, target int) {
	t.Helper()
	harness.Eventually(t, 2*converge, fmt.Sprintf("%d of %d objects converged, with a write by operator %d", target, k.total(), k.kills+1), func(ctx context.Context) (bool, string, error) {
		done, err := k.f.progress(ctx)
		wrote := len(k.p.requests(succeededWrite(k.started)))
		return done >= target && wrote > 0, fmt.Sprintf("%d converged; operator %d made %d writes", done, k.kills+1, wrote), err
	})
}

// kill SIGKILLs the running operator once tr holds its write, and checks
// that the process had made an accepted write. midBatch: it must also have
// moved the batch on since the kill before, and the kill must land before
// every object converged. (A kill during a release proves its point whether
// or not other objects are still pending.)
func (k *killRun) kill(t *testing.T, tr *trap, what string, midBatch bool) {
	t.Helper()
	k.kills++
	harness.Eventually(t, converge, fmt.Sprintf("operator %d to send %s", k.kills, what), func(context.Context) (bool, string, error) {
		return tr.wasCaught(), "not sent yet", nil
	})
	k.f.op.Kill()
	// The proxy saw the connection close: from here the write belongs to
	// no process.
	harness.Eventually(t, converge, "the killed operator's connection to close", func(context.Context) (bool, string, error) {
		return tr.clientGone(), "the held request's client is still there", nil
	})
	// Counted after the kill: the count only grows, so fewer than all
	// converged now means fewer at the kill.
	done, err := k.f.progress(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wrote := len(k.p.requests(succeededWrite(k.started)))
	t.Logf("SIGKILLed operator %d during %s (%s held) with %d of %d objects converged (%d more than at the kill before; it made %d accepted writes); starting a new one", k.kills, what, tr.path, done, k.total(), done-k.last, wrote)
	if midBatch && done >= k.total() {
		t.Errorf("kill %d landed after every object had converged: it proves nothing. The proxy holds each write %v; raise killWriteDelay", k.kills, killWriteDelay)
	}
	if wrote == 0 || midBatch && done <= k.last {
		t.Errorf("operator %d made %d writes and moved the batch from %d to %d converged before it was killed: it did no work", k.kills, wrote, k.last, done)
	}
	k.last = done
}

// land lets the dead operator's held write through, and waits until the API
// server has answered it.
func (k *killRun) land(t *testing.T, tr *trap, what string) {
	t.Helper()
	tr.release()
	harness.Eventually(t, converge, "the API server to answer the dead operator's "+what, func(context.Context) (bool, string, error) {
		return k.p.answer(tr) != 0, "not answered yet", nil
	})
	t.Logf("the dead operator's %s (%s) landed after the next operator's work: the API server answered %d", what, tr.path, k.p.answer(tr))
}

// killMidCreate: the kill lands while the next write to an object (not an
// Event) is held, and that write lands once the new process has had a write
// accepted.
func killMidCreate(t *testing.T, k *killRun, target int) {
	k.waitProgress(t, target)
	tr := k.p.setTrap(func(r *http.Request, _ []byte) bool {
		return isWrite(r.Method) && !strings.Contains(r.URL.Path, "/events")
	})
	k.kill(t, tr, "a write", true)
	k.restart(t)
	harness.Eventually(t, converge, "a write accepted from the new operator", func(context.Context) (bool, string, error) {
		n := len(k.p.requests(succeededWrite(k.started)))
		return n > 0, fmt.Sprintf("%d writes accepted", n), nil
	})
	k.land(t, tr, "write")
}

// killDuringHold: the kill lands while a ticket's seat-hold write is held
// (stage 06). One more ticket is created first, so that a seat-hold write is
// sure to come even when the batch's tickets are all booked. While no
// operator runs, the ticket whose hold was held is deleted; the new process
// releases it (it has no hold yet) and lets it go. Then the dead process's
// hold lands, and creates a hold for a ticket that is gone: the operator must
// delete it (checkSeatHolds). The batch keeps its number of tickets.
func killDuringHold(t *testing.T, k *killRun, target int) {
	f := k.f
	k.waitProgress(t, target)
	tr := k.p.setTrap(func(r *http.Request, body []byte) bool { return holdWritten(f.NS, r.Method, r.URL.Path, body) != "" })
	f.Create(t, ticketGVR, newTicket(fmt.Sprintf("t-%03d", k.tickets), "Oslo", "Bergen", 1))
	k.tickets++
	k.kill(t, tr, "a seat-hold write", true)
	name := holdWritten(f.NS, tr.method, tr.path, tr.body)
	if err := f.C.Dynamic.Resource(ticketGVR).Namespace(f.NS).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting ticket %s, whose seat hold the dead operator was writing: %v", name, err)
	}
	k.tickets--
	k.restart(t)
	f.waitTicketGone(t, name)
	k.land(t, tr, fmt.Sprintf("seat hold of ticket %s, which is gone", name))
}

// killDuringRelease: the kill lands while the release of a deleted ticket
// (its hold's deletion) is held (stage 06). The new process releases the
// ticket and lets it go; the ticket is booked again under the same name,
// which gives it a hold of the same name. Then the dead process's deletion
// arrives: its UID precondition names the old hold, so the API server
// refuses it with 409 Conflict, and the new hold stays (checkSeatHolds).
func killDuringRelease(t *testing.T, k *killRun, target int) {
	f := k.f
	k.waitProgress(t, target)
	tk := f.bookedTicket(t)
	tr := k.p.setTrap(func(r *http.Request, _ []byte) bool {
		return r.Method == http.MethodDelete && r.URL.Path == holdPath(f.NS, tk.name)
	})
	if err := f.C.Dynamic.Resource(ticketGVR).Namespace(f.NS).Delete(context.Background(), tk.name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting ticket %s: %v", tk.name, err)
	}
	k.kill(t, tr, fmt.Sprintf("the release of ticket %s", tk.name), false)
	k.restart(t)
	f.waitTicketGone(t, tk.name)
	f.Create(t, ticketGVR, tk.object())
	f.waitTicketBooked(t, tk.name, tk.from, tk.to, tk.number)
	harness.Eventually(t, converge, "the seat hold of ticket "+tk.name+" booked again", func(ctx context.Context) (bool, string, error) {
		holds, err := f.seatHolds(ctx)
		if err != nil {
			return false, "", err
		}
		for _, h := range holds {
			if h.Data["ticket"] == f.NS+"/"+tk.name {
				return true, "", nil
			}
		}
		return false, "no hold", nil
	})
	k.land(t, tr, fmt.Sprintf("release of ticket %s, booked again since", tk.name))
}

// holdWritten is the name of the ticket whose seat hold a request writes,
// "" for a request that writes none: a create in the ledger's ConfigMaps
// whose body names a hold (the name is plain text in JSON and in protobuf
// alike), or a patch or update of a hold.
func holdWritten(ns, method, urlPath string, body []byte) string {
	switch method {
	case http.MethodPost:
		if urlPath != "/api/v1/namespaces/"+ns+"/configmaps" || !bytes.Contains(body, []byte(seatHoldComponent)) {
			return ""
		}
		if m := regexp.MustCompile(regexp.QuoteMeta(ns+".") + `([a-z0-9-]+)`).FindSubmatch(body); m != nil {
			return string(m[1])
		}
	case http.MethodPatch, http.MethodPut:
		if name, ok := strings.CutPrefix(urlPath, holdPath(ns, "")); ok {
			return name
		}
	}
	return ""
}

// holdPath is the API path of the seat hold of ticket name in namespace ns,
// with the ledger in ns (the operator's --namespace, as the suite runs it).
func holdPath(ns, name string) string {
	return "/api/v1/namespaces/" + ns + "/configmaps/" + ns + "." + name
}

// bookedTicket returns a ticket of the fixture's that is booked.
func (f *fixture) bookedTicket(t *testing.T) ticket {
	t.Helper()
	list, err := f.C.Dynamic.Resource(ticketGVR).Namespace(f.NS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range list.Items {
		n, _, _ := unstructured.NestedInt64(u.Object, "spec", "number")
		tk := ticket{name: u.GetName(), from: str(&u, "spec", "from"), to: str(&u, "spec", "to"), number: n}
		if u.GetDeletionTimestamp() == nil && str(&u, "status", "phase") == phaseBooked && str(&u, "status", "message") == bookingMessage(tk.from, tk.to, n) {
			return tk
		}
	}
	t.Fatalf("no booked ticket in %s", f.NS)
	return ticket{}
}

// waitTicketGone waits until a deleted ticket is gone from the API server:
// an operator has released it and removed its finalizer.
func (f *fixture) waitTicketGone(t *testing.T, name string) {
	t.Helper()
	harness.Eventually(t, converge, "ticket "+name+" to be released and gone", func(ctx context.Context) (bool, string, error) {
		u, err := f.Get(ctx, ticketGVR, name)
		if err != nil {
			return false, "", err
		}
		if u == nil {
			return true, "", nil
		}
		return false, fmt.Sprintf("still there (deletionTimestamp=%v, finalizers=%v)", u.GetDeletionTimestamp(), u.GetFinalizers()), nil
	})
}

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// The tests of this file take seat holds away from under the operator, or
// leave a ticket without its finalizer, and check that the ledger ends up
// holding seats for exactly the tickets that exist: the operator watches its
// holds as well as its tickets.

// booking is a ticket the tests book, and what its seat hold must say.
type booking struct {
	name, from, to string
	seats          int64
}

// newLedgerWorld creates a ledger namespace, then the world whose operators
// keep their seat holds there (--ledger-namespace). The ledger is created
// first so that it is deleted last, after the world's tickets are released.
func newLedgerWorld(t *testing.T, cfg *envconf.Config, prefix string) (*world, string) {
	t.Helper()
	c, err := harness.NewClients(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ledger := c.Namespace(t, "ledger")
	return newWorld(t, cfg, prefix, "--ledger-namespace", ledger), ledger
}

// book creates the tickets and waits until each is Booked and the ledger
// holds seats for exactly them.
func book(t *testing.T, w *world, ledger string, bs ...booking) {
	t.Helper()
	for _, b := range bs {
		w.Create(t, ticketGVR, newTicketObject(b.name, b.from, b.to, b.seats))
	}
	for _, b := range bs {
		waitCondition(t, w, ticketGVR, b.name, "Booked", "True", "SeatsHeld")
	}
	waitHeldTickets(t, w.C, ledger, ticketKeys(w.NS, bs)...)
}

// ticketKeys are the "ns/name" of the bookings, as a hold's "ticket" key
// says them.
func ticketKeys(ns string, bs []booking) []string {
	keys := make([]string, len(bs))
	for i, b := range bs {
		keys[i] = ns + "/" + b.name
	}
	return keys
}

// checkHold fails the test unless hold is the seat hold of booking b in
// namespace ns: its labels and every data key.
func checkHold(t *testing.T, hold corev1.ConfigMap, ns string, b booking) {
	t.Helper()
	wantData := map[string]string{"ticket": ns + "/" + b.name, "from": b.from, "to": b.to, "seats": strconv.FormatInt(b.seats, 10)}
	if !maps.Equal(hold.Data, wantData) {
		t.Errorf("seat hold %s: data %v, want %v", hold.Name, hold.Data, wantData)
	}
	for k, v := range map[string]string{"app.kubernetes.io/component": "seat-hold", "app.kubernetes.io/managed-by": "operator-flow"} {
		if hold.Labels[k] != v {
			t.Errorf("seat hold %s: label %s=%q, want %q", hold.Name, k, hold.Labels[k], v)
		}
	}
}

// stripFinalizer removes the ticket's finalizer as people unstick a
// Terminating object: `kubectl patch --type=json -p
// '[{"op":"remove","path":"/metadata/finalizers/0"}]'`. The test op makes
// sure the entry removed is the operator's.
func stripFinalizer(t *testing.T, w *world, name string) {
	t.Helper()
	patch := fmt.Sprintf(`[{"op":"test","path":"/metadata/finalizers/0","value":%q},{"op":"remove","path":"/metadata/finalizers/0"}]`, ticketFinalizer)
	if _, err := w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS).Patch(context.Background(), name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("removing the finalizer of ticket %s/%s: %v", w.NS, name, err)
	}
}

// deleteNamespace deletes a namespace and waits until it is gone.
func deleteNamespace(t *testing.T, c *harness.Clients, ns string) {
	t.Helper()
	if err := c.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting namespace %s: %v", ns, err)
	}
	waitGone(t, "namespace "+ns, func(ctx context.Context) error {
		_, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return err
	})
}

// TestStrippedFinalizerComesBack: a finalizer someone removes from a booked
// ticket is put back, and a ticket that went without it while no operator
// ran has its hold deleted when one starts.
func TestStrippedFinalizerComesBack(t *testing.T) {
	var (
		w      *world
		ledger string
		op     *harness.Operator
	)
	f := features.New("a stripped finalizer").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w, ledger = newLedgerWorld(t, cfg, "stripped")
			op = w.start(t)
			book(t, w, ledger, booking{"back", "Oslo", "Bergen", 2}, booking{"away", "Oslo", "Tromso", 1})
			return ctx
		}).
		Assess("is put back, and deleting the ticket then gives its seats back", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			stripFinalizer(t, w, "back")
			harness.Eventually(t, converge, "the finalizer back on ticket back", func(ctx context.Context) (bool, string, error) {
				u, err := w.Get(ctx, ticketGVR, "back")
				if err != nil || u == nil {
					return false, "no ticket", err
				}
				return slices.Contains(u.GetFinalizers(), ticketFinalizer), fmt.Sprintf("finalizers %v", u.GetFinalizers()), nil
			})
			w.Delete(t, ticketGVR, "back")
			waitGone(t, "ticket back", func(ctx context.Context) error {
				_, err := w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS).Get(ctx, "back", metav1.GetOptions{})
				return err
			})
			if _, err := w.C.Kube.CoreV1().ConfigMaps(ledger).Get(ctx, w.NS+".back", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the seat hold outlived its ticket (err=%v)", err)
			}
			return ctx
		}).
		Assess("a ticket stripped and deleted while no operator runs has its hold deleted when one starts", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := op.Stop(); err != nil {
				t.Fatalf("the operator did not exit cleanly on SIGTERM: %v", err)
			}
			stripFinalizer(t, w, "away")
			w.Delete(t, ticketGVR, "away")
			// Without a finalizer the DELETE removes the ticket before it
			// returns: nothing is left for an operator to see.
			if u, err := w.Get(ctx, ticketGVR, "away"); err != nil || u != nil {
				t.Fatalf("ticket away is still there after its delete (err=%v)", err)
			}
			op = w.start(t)
			waitHoldGone(t, w.C, ledger, w.NS, "away")
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// TestHoldsComeBackAfterLedgerWipe: deleting a ledger namespace other than
// the operator's own (uninstalling the operator's namespace would remove the
// operator and its Roles too) deletes every seat hold. While
// there is no ledger, no seat is held, and the tickets say so: Booked False,
// Degraded True; every hold comes back once the namespace does, and the
// tickets are Booked again.
func TestHoldsComeBackAfterLedgerWipe(t *testing.T) {
	var (
		w      *world
		ledger string
	)
	bookings := []booking{{"north", "Oslo", "Tromso", 1}, {"west", "Oslo", "Bergen", 4}, {"south", "Oslo", "Kristiansand", 10}}
	f := features.New("the ledger namespace deleted and re-created").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w, ledger = newLedgerWorld(t, cfg, "wipe")
			w.start(t)
			book(t, w, ledger, bookings...)
			return ctx
		}).
		Assess("while the ledger namespace is gone, no ticket is Booked, and every one is Degraded", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			deleteNamespace(t, w.C, ledger)
			for _, b := range bookings {
				u := waitConditions(t, w, b.name, map[string]string{"Booked": "False", "Degraded": "True"})
				c, _ := conditionOf(u, "Degraded")
				t.Logf("ticket %s: Degraded %s", b.name, c)
			}
			return ctx
		}).
		Assess("once the ledger namespace is back, so is every ticket's hold", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// Its old name and the label harness.Clients.Namespace gives,
			// whose cleanup deletes it by that name.
			if _, err := w.C.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
				Name: ledger, Labels: map[string]string{"operator-flow/e2e": "true"},
			}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("re-creating namespace %s: %v", ledger, err)
			}
			holds := waitHeldTickets(t, w.C, ledger, ticketKeys(w.NS, bookings)...)
			for _, b := range bookings {
				i := slices.IndexFunc(holds, func(h corev1.ConfigMap) bool { return h.Data["ticket"] == w.NS+"/"+b.name })
				checkHold(t, holds[i], w.NS, b)
				waitConditions(t, w, b.name, map[string]string{"Booked": "True", "Degraded": "False"})
			}
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// TestTwoLedgersLeakNothing: two operators on the same tickets, each with a
// ledger of its own, share the finalizer's name, so whichever releases first
// lets the ticket go. The other one's hold must go too, whether that
// operator was running then or starts later.
func TestTwoLedgersLeakNothing(t *testing.T) {
	var (
		w      *world
		l1, l2 string
		second *harness.Operator
	)
	startSecond := func(t *testing.T) *harness.Operator {
		return w.Start(t, slices.Concat(stage.Args, []string{"--ledger-namespace", l2})...)
	}
	bookings := []booking{{"both", "Oslo", "Bergen", 2}, {"away", "Oslo", "Tromso", 3}}
	f := features.New("two operators with different ledgers").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w, l1 = newLedgerWorld(t, cfg, "two-ledgers")
			l2 = w.C.Namespace(t, "ledger")
			w.start(t)
			second = startSecond(t)
			book(t, w, l1, bookings...)
			waitHeldTickets(t, w.C, l2, ticketKeys(w.NS, bookings)...)
			return ctx
		}).
		Assess("a ticket deleted while both run leaves no hold in either ledger", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w.Delete(t, ticketGVR, "both")
			waitGone(t, "ticket both", func(ctx context.Context) error {
				_, err := w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS).Get(ctx, "both", metav1.GetOptions{})
				return err
			})
			waitHoldGone(t, w.C, l1, w.NS, "both")
			waitHoldGone(t, w.C, l2, w.NS, "both")
			return ctx
		}).
		Assess("a ticket deleted while one is stopped: that one deletes its hold when it starts", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := second.Stop(); err != nil {
				t.Fatalf("the second operator did not exit cleanly on SIGTERM: %v", err)
			}
			w.Delete(t, ticketGVR, "away")
			waitGone(t, "ticket away", func(ctx context.Context) error {
				_, err := w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS).Get(ctx, "away", metav1.GetOptions{})
				return err
			})
			waitHoldGone(t, w.C, l1, w.NS, "away")
			second = startSecond(t)
			waitHoldGone(t, w.C, l2, w.NS, "away")
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// TestForeignConfigMapAtHoldName: a ConfigMap that is not a seat hold (no
// seat-hold label) already has the name the ticket's hold would get. The
// operator must neither take it over nor delete it: the ticket says why it
// is not booked, and goes when deleted.
func TestForeignConfigMapAtHoldName(t *testing.T) {
	var (
		w       *world
		ledger  string
		foreign *corev1.ConfigMap
	)
	// untouched fails the test unless the foreign ConfigMap is there, the
	// same object, never written since it was created.
	untouched := func(ctx context.Context, t *testing.T) {
		t.Helper()
		cm, err := w.C.Kube.CoreV1().ConfigMaps(ledger).Get(ctx, foreign.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the foreign ConfigMap %s/%s: %v", ledger, foreign.Name, err)
		}
		if cm.UID != foreign.UID || cm.ResourceVersion != foreign.ResourceVersion || !maps.Equal(cm.Labels, foreign.Labels) || !maps.Equal(cm.Data, foreign.Data) {
			t.Errorf("the foreign ConfigMap %s/%s changed: uid %s, resourceVersion %s, labels %v, data %v; it was uid %s, resourceVersion %s, labels %v, data %v",
				ledger, cm.Name, cm.UID, cm.ResourceVersion, cm.Labels, cm.Data, foreign.UID, foreign.ResourceVersion, foreign.Labels, foreign.Data)
		}
	}
	f := features.New("a ConfigMap that is not a seat hold, at the hold's name").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w, ledger = newLedgerWorld(t, cfg, "foreign")
			var err error
			foreign, err = w.C.Kube.CoreV1().ConfigMaps(ledger).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: w.NS + ".taken", Labels: map[string]string{"app.kubernetes.io/name": "billing"}},
				Data:       map[string]string{"owner": "billing"},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w.start(t)
			return ctx
		}).
		Assess("the ticket is Degraded, HoldFailed, naming the ConfigMap, which is untouched", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w.Create(t, ticketGVR, newTicketObject("taken", "Oslo", "Bergen", 2))
			u := waitCondition(t, w, ticketGVR, "taken", "Degraded", "True", "HoldFailed")
			degraded, _ := conditionOf(u, "Degraded")
			t.Logf("Degraded: %s", degraded)
			if !strings.Contains(degraded.Message, foreign.Name) {
				t.Errorf("the Degraded message does not name the ConfigMap %s: %q", foreign.Name, degraded.Message)
			}
			if booked, _ := conditionOf(u, "Booked"); booked.Status == "True" {
				t.Errorf("Booked %s, although its seats are not held", booked)
			}
			untouched(ctx, t)
			return ctx
		}).
		Assess("deleting the ticket leaves the ConfigMap untouched, and the ticket goes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w.Delete(t, ticketGVR, "taken")
			waitGone(t, "ticket taken", func(ctx context.Context) error {
				_, err := w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS).Get(ctx, "taken", metav1.GetOptions{})
				return err
			})
			untouched(ctx, t)
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// TestTicketNamespaceDeleted: deleting a namespace that holds booked tickets
// deletes the tickets; the operator gives their seats back before the
// finalizer lets each go, so once the namespace is gone, the ledger holds
// nothing of it.
func TestTicketNamespaceDeleted(t *testing.T) {
	var (
		w      *world
		ledger string
	)
	f := features.New("a ticket namespace deleted with its tickets booked").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w, ledger = newLedgerWorld(t, cfg, "ns-deleted")
			w.start(t)
			book(t, w, ledger, booking{"one", "Oslo", "Bergen", 1}, booking{"two", "Oslo", "Tromso", 2}, booking{"three", "Oslo", "Bodo", 3})
			return ctx
		}).
		Assess("the namespace goes, and the ledger holds none of its tickets' seats", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			deleteNamespace(t, w.C, w.NS)
			// The namespace goes only after its tickets, and each ticket
			// only after its hold: nothing to wait for.
			holds, err := seatHoldsIn(ctx, w.C, ledger)
			if err != nil {
				t.Fatal(err)
			}
			if len(holds) != 0 {
				t.Errorf("the ledger still holds seats for %v", heldTickets(holds))
			}
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

const (
	// ticketFinalizer is the finalizer the operator puts on every ticket.
	ticketFinalizer = "flights.com/release-seats"
	// seatHolds selects the seat holds in a ledger namespace.
	seatHolds = "app.kubernetes.io/component=seat-hold"
	// cycles is how many tickets the leak check books and deletes.
	cycles = 100
	// batch is how many of them exist at the same time.
	batch = 20
)

// TestFinalizer: booking a ticket holds seats in a ledger namespace other
// than the ticket's, which no owner reference can reach; the finalizer is
// what gives them back.
func TestFinalizer(t *testing.T) {
	var w *world
	var ledger string
	holds := func(ctx context.Context) ([]corev1.ConfigMap, error) {
		list, err := w.C.Kube.CoreV1().ConfigMaps(ledger).List(ctx, metav1.ListOptions{LabelSelector: seatHolds})
		if err != nil {
			return nil, err
		}
		return list.Items, nil
	}
	f := features.New("the ticket's finalizer gives its seats back").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, err := harness.NewClients(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			// Created first, so deleted last: after the tickets.
			ledger = c.Namespace(t, "ledger")
			w = newWorld(t, cfg, "finalizer", "--ledger-namespace", ledger)
			w.start(t)
			return ctx
		}).
		Assess("a booked ticket carries the finalizer and holds its seats in the ledger namespace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if _, err := w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS).Create(ctx, newTicketObject("trip", "Oslo", "Tromso", 3), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			u := waitCondition(t, w, ticketGVR, "trip", "Booked", "True", "SeatsHeld")
			if !slices.Contains(u.GetFinalizers(), ticketFinalizer) {
				t.Errorf("finalizers %v, want %s", u.GetFinalizers(), ticketFinalizer)
			}
			hold, err := w.C.Kube.CoreV1().ConfigMaps(ledger).Get(ctx, w.NS+".trip", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("no seat hold %s/%s.trip: %v", ledger, w.NS, err)
			}
			if hold.Data["seats"] != "3" || hold.Data["ticket"] != w.NS+"/trip" {
				t.Errorf("seat hold data %v", hold.Data)
			}
			waitEvent(t, w.C, w.NS, "trip", corev1.EventTypeNormal, "Booked", "Booked 3 seat(s) from Oslo to Tromso")
			return ctx
		}).
		Assess("deleting the ticket gives its seats back, then the ticket is gone", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS).Delete(ctx, "trip", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitGone(t, "ticket trip", func(ctx context.Context) error {
				_, err := w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS).Get(ctx, "trip", metav1.GetOptions{})
				return err
			})
			if _, err := w.C.Kube.CoreV1().ConfigMaps(ledger).Get(ctx, w.NS+".trip", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the seat hold outlived its ticket (err=%v)", err)
			}
			// The Event outlives the ticket.
			waitEvent(t, w.C, w.NS, "trip", corev1.EventTypeNormal, "Deleted", "Gave the seats back")
			return ctx
		}).
		Assess(fmt.Sprintf("nothing leaks after %d tickets booked and deleted, %d at a time", cycles, batch), func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			tickets := w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS)
			for b := 0; b < cycles/batch; b++ {
				names := make([]string, batch)
				for i := range names {
					names[i] = fmt.Sprintf("cycle-%03d", b*batch+i)
				}
				inParallel(t, names, func(name string) error {
					_, err := tickets.Create(ctx, newTicketObject(name, "Oslo", "Bergen", int64(1+len(name)%10)), metav1.CreateOptions{})
					return err
				})
				harness.Eventually(t, converge, fmt.Sprintf("batch %d booked, each with a seat hold", b), func(ctx context.Context) (bool, string, error) {
					list, err := tickets.List(ctx, metav1.ListOptions{})
					if err != nil {
						return false, "", err
					}
					booked := 0
					for i := range list.Items {
						if c, _ := conditionOf(&list.Items[i], "Booked"); c.Status == "True" {
							booked++
						}
					}
					hs, err := holds(ctx)
					return booked == batch && len(hs) == batch, fmt.Sprintf("%d booked, %d holds", booked, len(hs)), err
				})
				inParallel(t, names, func(name string) error { return tickets.Delete(ctx, name, metav1.DeleteOptions{}) })
				harness.Eventually(t, converge, fmt.Sprintf("batch %d deleted, seats given back", b), func(ctx context.Context) (bool, string, error) {
					list, err := tickets.List(ctx, metav1.ListOptions{})
					if err != nil {
						return false, "", err
					}
					hs, err := holds(ctx)
					return len(list.Items) == 0 && len(hs) == 0, fmt.Sprintf("%d tickets and %d holds left", len(list.Items), len(hs)), err
				})
			}
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// TestFinalizerCleanupFails: when the seats cannot be given back, the
// ticket is not let go. The operator runs as its ServiceAccount, with the
// generated roles; taking its ledger RoleBinding away makes every release
// fail with 403 Forbidden, and putting it back lets the deletion finish.
func TestFinalizerCleanupFails(t *testing.T) {
	var (
		w       *world
		sa      *operatorAccount
		tickets dynamic.ResourceInterface
	)
	f := features.New("a failing cleanup keeps the ticket").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, err := harness.NewClients(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			sa = newOperatorAccount(t, c) // its namespace is the ledger
			w = newWorld(t, cfg, "stuck", "--ledger-namespace", sa.namespace)
			tickets = w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS)
			harness.StartOperator(t, sa.kubeconfig, w.Bin, append([]string{"--namespace", w.NS}, w.args...)...)
			if _, err := w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS).Create(ctx, newTicketObject("stuck", "Oslo", "Bergen", 2), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitCondition(t, w, ticketGVR, "stuck", "Booked", "True", "SeatsHeld")
			return ctx
		}).
		Assess("while the ledger refuses, the deleted ticket stays Terminating, Degraded, with a Warning Event", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if err := w.C.Kube.RbacV1().RoleBindings(sa.namespace).Delete(ctx, "operator-flow-06-ledger", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			// The RBAC authorizer learns of the removal through a watch of
			// its own, a moment after the delete returns: wait until the
			// account may no longer delete holds, or the release below
			// could still succeed.
			harness.Eventually(t, converge, "the ledger RoleBinding's removal to take effect", func(ctx context.Context) (bool, string, error) {
				ok := allowed(t, w.C, sa, "delete", "", "configmaps", sa.namespace)
				return !ok, "allowed=" + strconv.FormatBool(ok), nil
			})
			if err := w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS).Delete(ctx, "stuck", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			u := waitCondition(t, w, ticketGVR, "stuck", "Degraded", "True", "ReleaseFailed")
			c, _ := conditionOf(u, "Degraded")
			t.Logf("Degraded: %s", c)
			ev := waitEvent(t, w.C, w.NS, "stuck", corev1.EventTypeWarning, "Failed", "forbidden")
			t.Logf("Event: %s %s: %s", ev.Type, ev.Reason, ev.Message)
			// Still there, Terminating, and the seats still held.
			u, err := tickets.Get(ctx, "stuck", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the ticket is gone although its seats were not given back: %v", err)
			}
			if u.GetDeletionTimestamp() == nil || !slices.Contains(u.GetFinalizers(), ticketFinalizer) {
				t.Errorf("deletionTimestamp %v, finalizers %v: want Terminating with %s", u.GetDeletionTimestamp(), u.GetFinalizers(), ticketFinalizer)
			}
			if _, err := w.C.Kube.CoreV1().ConfigMaps(sa.namespace).Get(ctx, w.NS+".stuck", metav1.GetOptions{}); err != nil {
				t.Errorf("the seat hold is gone: %v", err)
			}
			return ctx
		}).
		Assess("once the permission is back, the seats are given back and the ticket goes", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if _, err := w.C.Kube.RbacV1().RoleBindings(sa.namespace).Create(ctx, roleBinding(sa, "operator-flow-06-ledger"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitGone(t, "ticket stuck", func(ctx context.Context) error {
				_, err := tickets.Get(ctx, "stuck", metav1.GetOptions{})
				return err
			})
			if _, err := w.C.Kube.CoreV1().ConfigMaps(sa.namespace).Get(ctx, w.NS+".stuck", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the seat hold outlived its ticket (err=%v)", err)
			}
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// inParallel runs fn for every name from ten goroutines, and fails the test
// on the first error.
func inParallel(t *testing.T, names []string, fn func(name string) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	work := make(chan string)
	for range 10 {
		wg.Go(func() {
			for n := range work {
				if err := fn(n); err != nil {
					errs <- fmt.Errorf("%s: %w", n, err)
				}
			}
		})
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

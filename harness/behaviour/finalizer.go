package behaviour

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operator-flow/operator-flow/harness"
)

// ReleaseTicketsAtCleanup makes sure that, when the test ends, no
// FlightTicket is left in namespace ns waiting for its finalizer (stage 06).
// A ticket with a finalizer is only gone once an operator has released its
// seats, and a namespace is only gone once everything in it is: without this
// step, every test namespace holding a ticket would stay Terminating
// forever, because its operator stops before the namespace is deleted.
//
// Call it right after creating the namespace: cleanups run last-registered
// first, so it then runs after the test's operators have stopped and before
// the namespace is deleted. It deletes the remaining tickets and runs a
// fresh operator (bin with --namespace ns and args, against kubeconfig)
// until they are gone. It is the finalizer doing its job, not a way around
// it: nothing is force-removed.
func ReleaseTicketsAtCleanup(t testing.TB, c *harness.Clients, ns, kubeconfig, bin string, args ...string) {
	t.Helper()
	t.Cleanup(func() {
		tickets := c.Dynamic.Resource(ticketGVR).Namespace(ns)
		list, err := tickets.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Errorf("listing the tickets left in %s: %v", ns, err)
			return
		}
		if len(list.Items) == 0 {
			return
		}
		if err := tickets.DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Errorf("deleting the tickets left in %s: %v", ns, err)
			return
		}
		// A ticket without the finalizer is gone at once.
		if list, err = tickets.List(context.Background(), metav1.ListOptions{}); err == nil && len(list.Items) == 0 {
			return
		}
		// Stopped by its own cleanup, which runs right after this one.
		op := harness.StartOperator(t, kubeconfig, bin, append([]string{"--namespace", ns}, args...)...)
		// Polled here rather than with harness.Eventually, whose t.Fatalf
		// would cut the remaining cleanups short (the operator's among them).
		// Only this operator's crash ends the wait early: the test's own
		// operators, which may have crashed before, are not the ones
		// releasing these tickets.
		left, crash := 0, ""
		err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, converge, true, func(ctx context.Context) (bool, error) {
			crashed := op.Crash() // before the list: see harness.Eventually
			list, err := tickets.List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			left = len(list.Items)
			if left > 0 && crashed != "" {
				crash = crashed
				return false, errors.New(crash)
			}
			return left == 0, nil
		})
		switch {
		case crash != "":
			t.Errorf("%s\nso %d ticket(s) left in %s were not released", crash, left, ns)
		case err != nil:
			t.Errorf("waiting %s for the tickets left in %s to be released: %v; %d tickets left", converge, ns, err, left)
		}
	})
}

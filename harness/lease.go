package harness

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// WatchLeaseRelease starts watching the one Lease in namespace ns, and
// returns a function that waits up to timeout for the Lease to be given
// back: an update whose holderIdentity is empty. Call it while the leader
// still holds the Lease, then stop the leader, then wait.
//
// A leader that releases on exit (client-go's ReleaseOnCancel) writes the
// Lease once more, with no holder and leaseDurationSeconds 1. The watch
// starts at the version the leader holds, so it sees every update after it,
// even when a standby takes the Lease a moment later. A Lease that passes to
// another holder without that update was not released: the standby waited
// for it to expire. The wait fails then, and when nothing happens within
// timeout.
func WatchLeaseRelease(t testing.TB, c *Clients, ns string) (wait func(timeout time.Duration)) {
	t.Helper()
	leases, err := c.Kube.CoordinationV1().Leases(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the Leases in %s: %v", ns, err)
	}
	if len(leases.Items) != 1 {
		t.Fatalf("%d Leases in %s, want the leader's one", len(leases.Items), ns)
	}
	lease := leases.Items[0]
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	w, err := c.Kube.CoordinationV1().Leases(ns).Watch(context.Background(), metav1.ListOptions{
		FieldSelector:   "metadata.name=" + lease.Name,
		ResourceVersion: lease.ResourceVersion,
	})
	if err != nil {
		t.Fatalf("watching Lease %s/%s: %v", ns, lease.Name, err)
	}
	return func(timeout time.Duration) {
		t.Helper()
		defer w.Stop()
		deadline := time.After(timeout)
		for {
			select {
			case <-deadline:
				t.Errorf("Lease %s/%s still held by %q %v after the leader was stopped: it was not released", ns, lease.Name, holder, timeout)
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Errorf("the watch on Lease %s/%s ended before the Lease was released", ns, lease.Name)
					return
				}
				l, isLease := ev.Object.(*coordinationv1.Lease)
				if ev.Type != watch.Modified || !isLease {
					t.Errorf("unexpected %s event on Lease %s/%s: %v", ev.Type, ns, lease.Name, ev.Object)
					return
				}
				switch now := ptr.Deref(l.Spec.HolderIdentity, ""); now {
				case holder:
					continue // a renewal before the stop
				case "":
					t.Logf("Lease %s/%s released: holderIdentity empty, leaseDurationSeconds %d", ns, lease.Name, ptr.Deref(l.Spec.LeaseDurationSeconds, 0))
					if d := ptr.Deref(l.Spec.LeaseDurationSeconds, 0); d != 1 {
						t.Errorf("the released Lease has leaseDurationSeconds %d; client-go's release sets 1", d)
					}
					return
				default:
					t.Errorf("Lease %s/%s passed from %q to %q without being released: the standby waited for it to expire", ns, lease.Name, holder, now)
					return
				}
			}
		}
	}
}

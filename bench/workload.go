package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/operator-flow/operator-flow/harness"
)

var (
	ticketsGVR     = harness.TicketGVR
	loggersGVR     = harness.LoggerGVR
	deploymentsGVR = harness.DeploymentGVR
	configMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// The workload: n tickets and m Loggers, created at once, edited once each,
// then deleted. The numbers below are what the edit changes.
const (
	seatsBefore, seatsAfter       = 1, 2
	intervalBefore, intervalAfter = 5, 7
	loggerReplicas                = 1
	writers                       = 8 // goroutines that send the workload's requests
)

func ticket(i int) *unstructured.Unstructured {
	return harness.NewTicket(fmt.Sprintf("t-%05d", i), "Amsterdam", "Lisbon", seatsBefore)
}

func logger(i int) *unstructured.Unstructured {
	return harness.NewLogger(fmt.Sprintf("l-%04d", i), fmt.Sprintf("bench-%d", i), intervalBefore, loggerReplicas)
}

// parallel runs fn(0..count-1) on `writers` goroutines and returns the first error.
func parallel(count int, fn func(i int) error) error {
	next := make(chan int)
	go func() {
		for i := 0; i < count; i++ {
			next <- i
		}
		close(next)
	}()
	return parallelFrom(writers, next, fn)
}

// parallelFrom runs fn on every item of items, on `workers` goroutines, and
// returns the first error.
func parallelFrom[T any](workers int, items <-chan T, fn func(T) error) error {
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for item := range items {
				if err := fn(item); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// mixed runs fn for n tickets (i < n) and m Loggers (i >= n) on the
// workload's writers, in the order interleave gives.
func mixed(n, m int, fn func(i int) error) error {
	order := interleave(n, m)
	return parallel(len(order), func(i int) error { return fn(order[i]) })
}

// interleave orders n tickets (0..n-1) and m Loggers (n..n+m-1) evenly:
// "at once" means that neither kind waits for the other. (One kind after the
// other, the Loggers' clock would start while 1000 tickets are still being
// created, seconds before the first Logger exists.)
func interleave(n, m int) []int {
	order := make([]int, 0, n+m)
	for t, l := 0, 0; t < n || l < m; {
		// Next is whichever kind is further behind its share: ticket t
		// sits at (t+0.5)/n of its kind, Logger l at (l+0.5)/m.
		if l == m || (t < n && (2*t+1)*m <= (2*l+1)*n) {
			order, t = append(order, t), t+1
		} else {
			order, l = append(order, n+l), l+1
		}
	}
	return order
}

// createAll creates n tickets and m Loggers at once.
func createAll(ctx context.Context, dyn dynamic.Interface, ns string, n, m int) error {
	return mixed(n, m, func(i int) error {
		if i < n {
			_, err := dyn.Resource(ticketsGVR).Namespace(ns).Create(ctx, ticket(i), metav1.CreateOptions{})
			return err
		}
		_, err := dyn.Resource(loggersGVR).Namespace(ns).Create(ctx, logger(i-n), metav1.CreateOptions{})
		return err
	})
}

// editAll changes one spec field of every object with a JSON merge patch.
func editAll(ctx context.Context, dyn dynamic.Interface, ns string, n, m int) error {
	return mixed(n, m, func(i int) error {
		if i < n {
			patch := fmt.Sprintf(`{"spec":{"number":%d}}`, seatsAfter)
			_, err := dyn.Resource(ticketsGVR).Namespace(ns).Patch(ctx, ticket(i).GetName(), "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
			return err
		}
		patch := fmt.Sprintf(`{"spec":{"timeInterval":%d}}`, intervalAfter)
		_, err := dyn.Resource(loggersGVR).Namespace(ns).Patch(ctx, logger(i-n).GetName(), "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
		return err
	})
}

// deleteAll deletes every ticket and Logger.
func deleteAll(ctx context.Context, dyn dynamic.Interface, ns string, n, m int) error {
	return mixed(n, m, func(i int) error {
		var err error
		if i < n {
			err = dyn.Resource(ticketsGVR).Namespace(ns).Delete(ctx, ticket(i).GetName(), metav1.DeleteOptions{})
		} else {
			err = dyn.Resource(loggersGVR).Namespace(ns).Delete(ctx, logger(i-n).GetName(), metav1.DeleteOptions{})
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// observer keeps a watch-fed cache of the namespace's tickets, Loggers and
// Deployments, so that checking convergence costs the API server nothing
// beyond one WATCH per kind (it streams the current objects first).
type observer struct {
	tickets, loggers, deployments cache.Store
	stop                          context.CancelFunc
}

func observe(ctx context.Context, dyn dynamic.Interface, ns string) (*observer, error) {
	ctx, cancel := context.WithCancel(ctx)
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, nil)
	o := &observer{
		tickets:     f.ForResource(ticketsGVR).Informer().GetStore(),
		loggers:     f.ForResource(loggersGVR).Informer().GetStore(),
		deployments: f.ForResource(deploymentsGVR).Informer().GetStore(),
		stop:        cancel,
	}
	f.Start(ctx.Done())
	for gvr, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			return nil, fmt.Errorf("watching %s did not sync", gvr.Resource)
		}
	}
	return o, nil
}

// ticketsDone counts tickets whose status books `seats` seats.
func (o *observer) ticketsDone(seats int) int {
	want := fmt.Sprintf("Booked %d seat(s) from Amsterdam to Lisbon", seats)
	done := 0
	for _, x := range o.tickets.List() {
		u := x.(*unstructured.Unstructured)
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		msg, _, _ := unstructured.NestedString(u.Object, "status", "message")
		if phase == "Booked" && msg == want {
			done++
		}
	}
	return done
}

// loggersDone counts Loggers that are Available and whose Deployment has
// rolled out the given interval with at least one available replica.
func (o *observer) loggersDone(interval int) int {
	done := 0
	for _, x := range o.loggers.List() {
		u := x.(*unstructured.Unstructured)
		if state, _, _ := unstructured.NestedString(u.Object, "status", "state"); state != "Available" {
			continue
		}
		d, ok, _ := o.deployments.GetByKey(u.GetNamespace() + "/logger-" + u.GetName())
		if ok && deploymentRolledOut(d.(*unstructured.Unstructured), interval) {
			done++
		}
	}
	return done
}

// deploymentRolledOut: the Deployment's pods run the given interval, the
// rollout is complete, and a replica is available.
func deploymentRolledOut(d *unstructured.Unstructured, interval int) bool {
	gen, _, _ := unstructured.NestedInt64(d.Object, "metadata", "generation")
	observed, _, _ := unstructured.NestedInt64(d.Object, "status", "observedGeneration")
	replicas, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
	updated, _, _ := unstructured.NestedInt64(d.Object, "status", "updatedReplicas")
	available, _, _ := unstructured.NestedInt64(d.Object, "status", "availableReplicas")
	return deploymentAsks(d, interval) && observed >= gen && updated == replicas && available >= 1
}

// deploymentAsks: the Deployment's pod template runs the given interval,
// whether or not kube-controller-manager has rolled it out yet.
func deploymentAsks(d *unstructured.Unstructured, interval int) bool {
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return false
	}
	env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
	for _, e := range env {
		m := e.(map[string]any)
		if m["name"] == "TIME_INTERVAL" && m["value"] == fmt.Sprint(interval) {
			return true
		}
	}
	return false
}

// loggersWritten counts Loggers whose operator has done its own part: the
// Deployment asks for the given interval, and the Logger has a status.state
// (Available or not). The rest, rolling the Deployment out, is
// kube-controller-manager's, the scheduler's and kwok's work.
func (o *observer) loggersWritten(interval int) int {
	done := 0
	for _, x := range o.loggers.List() {
		u := x.(*unstructured.Unstructured)
		if state, _, _ := unstructured.NestedString(u.Object, "status", "state"); state == "" {
			continue
		}
		d, ok, _ := o.deployments.GetByKey(u.GetNamespace() + "/logger-" + u.GetName())
		if ok && deploymentAsks(d.(*unstructured.Unstructured), interval) {
			done++
		}
	}
	return done
}

// waitFor polls the observer's cache every 20 ms until done() holds, and
// returns how long that took from start. It gives up at the deadline and says
// what it saw last.
func waitFor(ctx context.Context, start time.Time, timeout time.Duration, what string, done func() (bool, string)) (time.Duration, error) {
	took, err := waitEach(ctx, start, timeout, condition{what, done})
	if err != nil {
		return 0, err
	}
	return took[0], nil
}

// condition is one thing waitEach waits for.
type condition struct {
	what string
	done func() (bool, string)
}

// waitEach polls every condition every 20 ms, side by side, until all hold,
// and returns for each how long it took from start to hold first. (Waiting
// for one after the other would give a condition that held early the time
// of the one before it.)
func waitEach(ctx context.Context, start time.Time, timeout time.Duration, conds ...condition) ([]time.Duration, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	took := make([]time.Duration, len(conds))
	for {
		var seen []string
		for i, c := range conds {
			if took[i] > 0 {
				continue
			}
			if ok, s := c.done(); ok {
				took[i] = time.Since(start)
			} else {
				seen = append(seen, c.what+": "+s)
			}
		}
		if len(seen) == 0 {
			return took, nil
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-deadline:
			return nil, fmt.Errorf("did not converge within %s: %s", timeout, strings.Join(seen, "; "))
		case <-tick.C:
		}
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/operator-flow/operator-flow/harness"
)

// The floors answer "how fast could any operator possibly be here?", measured
// in the same run on the same machine, so that a stage's time can be given as
// a ratio that survives a noisy machine.
//
// A floor runs the stages' workload without an operator's machinery: the
// same writers create the same n tickets and m Loggers' worth of objects in
// the same interleaved order, and a minimal client does the lower bound's
// work as each create returns. Both kinds run together, as they do for the
// stages: while the tickets are being booked, kube-controller-manager,
// the scheduler and kwok are rolling the Deployments out on the same cores.
//
//   - Loggers: the Deployments that m Loggers would produce are applied
//     straight to the cluster and timed to Available. What is left is the
//     cluster's own work: kube-controller-manager creating ReplicaSets and
//     Pods at its own client rate, the scheduler, kwok.
//   - Tickets: as each create returns, the ticket goes to one of
//     floorWorkers goroutines, the operators' workers, which book it with
//     the lower bound's writes and nothing else: one status write. With
//     ledger (stage 06), also what booking costs there before the status:
//     the finalizer, then the seat hold, so that 06's time is compared with
//     the same three writes; and once the status is written, the Booked
//     Event that 06 records for each booking (see recordBooked). That is
//     more than the lower bound of writes, which leaves Events out: this
//     floor is the fastest an operator with 06's behaviour could book.
func measureFloor(ctx context.Context, c *harness.Clients, ns string, n, m int, ledger bool) (floors, error) {
	var f floors
	o, err := observe(ctx, c.Dynamic, ns)
	if err != nil {
		return f, err
	}
	defer o.stop()
	r := c.Dynamic.Resource(ticketsGVR).Namespace(ns)
	// Stages 02-05 store status in the object itself; 06 has a status
	// subresource. The installed CRD says which, so that each booking is
	// one request.
	subresource, err := hasStatusSubresource(ctx, c, ticketsGVR)
	if err != nil {
		return f, err
	}
	if ledger {
		// Untimed: without its finalizer no ticket, and so not the
		// namespace, could be deleted afterwards.
		defer func() {
			if err := parallel(n, func(i int) error {
				_, err := r.Patch(context.Background(), ticket(i).GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
				return err
			}); err != nil {
				fmt.Fprintf(os.Stderr, "bench: removing the tickets' finalizer: %v (namespace %s may not go away)\n", err, ns)
			}
		}()
	}
	// With ledger, every booking's Event is sent on a goroutine of its own
	// (an errgroup keeps the first error). Waited for on every return, so
	// that none is still being sent when the namespace is deleted.
	var events errgroup.Group
	defer func() { _ = events.Wait() }() // its error is returned by the Wait at the end
	book := func(t *unstructured.Unstructured) error {
		var err error
		if ledger {
			if t, err = r.Patch(ctx, t.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":["`+floorFinalizer+`"]}}`), metav1.PatchOptions{}); err != nil {
				return err
			}
			// The hold, as 06 applies it: one ConfigMap per ticket.
			hold := corev1ac.ConfigMap(t.GetName(), ns).WithData(map[string]string{
				"ticket": ns + "/" + t.GetName(), "from": "Amsterdam", "to": "Lisbon", "seats": fmt.Sprint(seatsBefore),
			})
			if _, err := c.Kube.CoreV1().ConfigMaps(ns).Apply(ctx, hold, metav1.ApplyOptions{FieldManager: "bench-floor", Force: true}); err != nil {
				return err
			}
		}
		if err := unstructured.SetNestedField(t.Object, "Booked", "status", "phase"); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(t.Object, fmt.Sprintf("Booked %d seat(s) from Amsterdam to Lisbon", seatsBefore), "status", "message"); err != nil {
			return err
		}
		if subresource {
			_, err = r.UpdateStatus(ctx, t, metav1.UpdateOptions{})
		} else {
			_, err = r.Update(ctx, t, metav1.UpdateOptions{})
		}
		if err == nil && ledger {
			events.Go(func() error { return recordBooked(ctx, c, t) })
		}
		return err
	}

	start := time.Now()
	created := make(chan *unstructured.Unstructured, n)
	workers := make(chan error, 1)
	go func() {
		// The workers run while the creates go on, as an operator's do.
		workers <- parallelFrom(floorWorkers, created, book)
	}()
	err = mixed(n, m, func(i int) error {
		if i >= n {
			_, err := c.Dynamic.Resource(deploymentsGVR).Namespace(ns).Create(ctx, floorDeployment(i-n), metav1.CreateOptions{})
			return err
		}
		t, err := r.Create(ctx, ticket(i), metav1.CreateOptions{})
		if err == nil {
			created <- t
		}
		return err
	})
	close(created)
	if err := errors.Join(err, <-workers); err != nil {
		return f, err
	}
	took, err := waitEach(ctx, start, 10*time.Minute,
		condition{"floor tickets", func() (bool, string) {
			done := o.ticketsDone(seatsBefore)
			return done == n, fmt.Sprintf("%d/%d tickets booked", done, n)
		}},
		condition{"floor Deployments", func() (bool, string) {
			done := 0
			for _, x := range o.deployments.List() {
				if deploymentRolledOut(x.(*unstructured.Unstructured), intervalBefore) {
					done++
				}
			}
			return done == m, fmt.Sprintf("%d/%d Deployments available", done, m)
		}},
		// The Loggers' part an operator could do at best: every
		// Deployment exists, as soon as the creates return.
		condition{"floor Deployments created", func() (bool, string) {
			done := len(o.deployments.ListKeys())
			return done == m, fmt.Sprintf("%d/%d Deployments created", done, m)
		}})
	if err != nil {
		return f, err
	}
	f.Tickets, f.Loggers, f.LoggersCreated = took[0], took[1], took[2]
	// Untimed, as for the operators: their Events may still be on the way
	// when the last status is written.
	if err := events.Wait(); err != nil {
		return f, fmt.Errorf("recording the Booked Events: %w", err)
	}
	return f, nil
}

// hasStatusSubresource reads the CRD of gvr and says whether its served
// version has a /status subresource.
func hasStatusSubresource(ctx context.Context, c *harness.Clients, gvr schema.GroupVersionResource) (bool, error) {
	crds := apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	crd, err := c.Dynamic.Resource(crds).Get(ctx, gvr.Resource+"."+gvr.Group, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading the CRD of %s: %w", gvr.Resource, err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		v, _ := v.(map[string]any)
		if v["name"] != gvr.Version {
			continue
		}
		_, found, _ := unstructured.NestedMap(v, "subresources", "status")
		return found, nil
	}
	return false, fmt.Errorf("the CRD of %s has no version %s", gvr.Resource, gvr.Version)
}

// recordBooked records the Event stage 06 records for a booking: a Normal
// "Booked" Event through the events.k8s.io API, with the same fields and a
// note of the same form. 06 does not wait for its Events: client-go's
// events.k8s.io broadcaster sends each one on a goroutine of its own
// (recordToSink in k8s.io/client-go/tools/events), apart from the workers.
// The floor sends them the same way, so that the Events share the API server
// with the bookings as 06's do, and hold up no worker.
func recordBooked(ctx context.Context, c *harness.Clients, t *unstructured.Unstructured) error {
	now := metav1.NowMicro()
	e := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", t.GetName(), now.UnixNano()), Namespace: t.GetNamespace()},
		EventTime:  now,
		Regarding: corev1.ObjectReference{
			APIVersion: t.GetAPIVersion(), Kind: t.GetKind(), Namespace: t.GetNamespace(), Name: t.GetName(),
			UID: t.GetUID(), ResourceVersion: t.GetResourceVersion(),
		},
		Type:                corev1.EventTypeNormal,
		Reason:              "Booked",
		Action:              "Book",
		Note:                fmt.Sprintf("Booked %d seat(s) from Amsterdam to Lisbon (seat hold %s/%s)", seatsBefore, t.GetNamespace(), t.GetName()),
		ReportingController: "bench-floor",
		ReportingInstance:   "bench-floor",
	}
	_, err := c.Kube.EventsV1().Events(t.GetNamespace()).Create(ctx, e, metav1.CreateOptions{})
	return err
}

// floorWorkers is the operators' default --workers: the floor books tickets
// at the concurrency they do.
const floorWorkers = 2

// floorFinalizer stands for 06's finalizer on the floor's tickets.
const floorFinalizer = "bench.operator-flow.dev/floor"

// floorDeployment is the Deployment docs/behaviour.md says a Logger gets.
func floorDeployment(i int) *unstructured.Unstructured {
	name := fmt.Sprintf("l-%04d", i)
	labels := map[string]any{"app.kubernetes.io/name": "logger", "app.kubernetes.io/instance": name}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "logger-" + name, "labels": labels},
		"spec": map[string]any{
			"replicas": int64(loggerReplicas),
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"containers": []any{map[string]any{
						"name":    "logger",
						"image":   "busybox:1.37",
						"command": []any{"/bin/sh", "-c", `while true; do echo "$(date -u +%FT%TZ) $LOGGER_NAME is active"; sleep "$TIME_INTERVAL"; done`},
						"env": []any{
							map[string]any{"name": "LOGGER_NAME", "value": fmt.Sprintf("bench-%d", i)},
							map[string]any{"name": "TIME_INTERVAL", "value": fmt.Sprint(intervalBefore)},
						},
					}},
				},
			},
		},
	}}
}

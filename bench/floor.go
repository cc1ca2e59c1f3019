package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/operator-flow/operator-flow/harness"
)

// The floors answer "how fast could any operator possibly be here?", measured
// in the same run on the same machine, so that a stage's time can be given as
// a ratio that survives a noisy machine.

// loggerFloor applies the Deployments that m Loggers would produce straight to
// the cluster, at the workload's concurrency, and times them to Available.
// What is left is the cluster's own work: kube-controller-manager creating
// ReplicaSets and Pods at its own client rate, the scheduler, kwok.
func loggerFloor(ctx context.Context, c *harness.Clients, ns string, m int) (time.Duration, error) {
	o, err := observe(ctx, c.Dynamic, ns)
	if err != nil {
		return 0, err
	}
	defer o.stop()
	start := time.Now()
	err = parallel(m, func(i int) error {
		_, err := c.Dynamic.Resource(deploymentsGVR).Namespace(ns).Create(ctx, floorDeployment(i), metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, err
	}
	return waitFor(ctx, start, 10*time.Minute, "floor Deployments", func() (bool, string) {
		done := 0
		for _, x := range o.deployments.List() {
			if deploymentRolledOut(x.(*unstructured.Unstructured), intervalBefore) {
				done++
			}
		}
		return done == m, fmt.Sprintf("%d/%d Deployments available", done, m)
	})
}

// ticketFloor is a minimal operator with no latency and no overhead: the
// workload's writers create n tickets, and as each create returns, the
// ticket is handed to one of floorWorkers goroutines, the operators' workers,
// which book it with the lower bound's writes and nothing else. That is one
// status write per ticket. With ledger (stage 06) it is also what booking
// costs there before the status: the finalizer, then the seat hold, so that
// 06's time is compared with the same three writes.
func ticketFloor(ctx context.Context, c *harness.Clients, ns string, n int, ledger bool) (time.Duration, error) {
	o, err := observe(ctx, c.Dynamic, ns)
	if err != nil {
		return 0, err
	}
	defer o.stop()
	r := c.Dynamic.Resource(ticketsGVR).Namespace(ns)
	if ledger {
		// Untimed: without its finalizer no ticket, and so not the
		// namespace, could be deleted afterwards.
		defer parallel(n, func(i int) error {
			_, err := r.Patch(context.Background(), ticket(i).GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			return err
		})
	}
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
		unstructured.SetNestedField(t.Object, "Booked", "status", "phase")
		unstructured.SetNestedField(t.Object, fmt.Sprintf("Booked %d seat(s) from Amsterdam to Lisbon", seatsBefore), "status", "message")
		// Stages 02-05 store status in the object itself; 06 has a status
		// subresource. Whichever CRD is installed, one of the two applies.
		if _, err := r.UpdateStatus(ctx, t, metav1.UpdateOptions{}); err == nil {
			return nil
		}
		_, err = r.Update(ctx, t, metav1.UpdateOptions{})
		return err
	}

	start := time.Now()
	created := make(chan *unstructured.Unstructured, n)
	workers := make(chan error, 1)
	go func() {
		// The workers run while the creates go on, as an operator's do.
		workers <- parallelFrom(floorWorkers, created, book)
	}()
	err = parallel(n, func(i int) error {
		t, err := r.Create(ctx, ticket(i), metav1.CreateOptions{})
		if err == nil {
			created <- t
		}
		return err
	})
	close(created)
	if err := errors.Join(err, <-workers); err != nil {
		return 0, err
	}
	return waitFor(ctx, start, 10*time.Minute, "floor tickets", func() (bool, string) {
		done := o.ticketsDone(seatsBefore)
		return done == n, fmt.Sprintf("%d/%d tickets booked", done, n)
	})
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

package controller

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	examplev1 "github.com/operator-flow/operator-flow/05-controller-runtime/api/example/v1"
	flightsv1 "github.com/operator-flow/operator-flow/05-controller-runtime/api/flights/v1"
)

// These tests run Reconcile against controller-runtime's fake client: no
// cluster, just the steps. The e2e tests check the same against a real API
// server.

func testScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, flightsv1.AddToScheme, examplev1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// countWrites wraps the fake client so that a test can assert how many
// writes a reconcile made.
func countWrites(n *int) interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			*n++
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			*n++
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			*n++
			return c.Patch(ctx, o, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			*n++
			return c.Delete(ctx, o, opts...)
		},
	}
}

func request(ns, name string) ctrl.Request {
	return ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

func TestFlightTicketIsBookedOnceThenLeftAlone(t *testing.T) {
	ticket := &flightsv1.FlightTicket{
		ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "lab"},
		Spec:       flightsv1.FlightTicketSpec{From: "Amsterdam", To: "Lisbon", Number: 2},
	}
	writes := 0
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(ticket).WithInterceptorFuncs(countWrites(&writes)).Build()
	r := &FlightTicketReconciler{Client: c}

	for range 2 {
		if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
			t.Fatal(err)
		}
	}
	var got flightsv1.FlightTicket
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(ticket), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != "Booked" || got.Status.Message != "Booked 2 seat(s) from Amsterdam to Lisbon" {
		t.Errorf("status = %+v", got.Status)
	}
	if writes != 1 {
		t.Errorf("%d writes for two reconciles of one ticket, want 1 (the second finds it in sync)", writes)
	}
}

func TestDeletedFlightTicketIsNotAnError(t *testing.T) {
	r := &FlightTicketReconciler{Client: fake.NewClientBuilder().WithScheme(testScheme(t)).Build()}
	if _, err := r.Reconcile(t.Context(), request("lab", "gone")); err != nil {
		t.Errorf("reconciling a deleted ticket: %v", err)
	}
}

func TestLoggerGetsDeploymentAndStatus(t *testing.T) {
	logger := testLogger()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(logger).Build()
	r := &LoggerReconciler{Client: c, Image: "busybox:1.37"}
	if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: "lab", Name: "logger-heartbeat"}, &d); err != nil {
		t.Fatalf("no Deployment: %v", err)
	}
	var got examplev1.Logger
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(logger), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.State != examplev1.StateUnavailable {
		t.Errorf("state = %q, want Unavailable before any replica is available", got.Status.State)
	}

	// The Deployment controller reports an available replica.
	d.Status.AvailableReplicas = 1
	if err := c.Status().Update(t.Context(), &d); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(logger), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.State != examplev1.StateAvailable {
		t.Errorf("state = %q, want Available", got.Status.State)
	}
}

// managedCache builds a fake client that, like the Manager's cache with
// CacheByObject, does not see Deployments without the managed-by label.
// Writes go to the API server, which sees everything.
func managedCache(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	var selector labels.Selector
	for _, by := range CacheByObject() {
		selector = by.Label
	}
	return fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, o, opts...); err != nil {
				return err
			}
			if _, ok := o.(*appsv1.Deployment); ok && !selector.Matches(labels.Set(o.GetLabels())) {
				return apierrors.NewNotFound(appsv1.Resource("deployments"), key.Name)
			}
			return nil
		},
	}).Build()
}

// A reconcile for a Logger that no longer exists deletes its Deployment, but
// only one this operator made.
func TestGoneLoggerLosesOnlyItsOwnDeployment(t *testing.T) {
	l := testLogger()
	ours := desiredDeployment(l.Namespace, l.Name, l.Spec, "img")
	theirs := ours.DeepCopy()
	delete(theirs.Labels, managedByLabel)
	theirs.Namespace = "other"
	c := managedCache(t, ours, theirs)
	r := &LoggerReconciler{Client: c, Image: "img"}

	for _, ns := range []string{"lab", "other"} {
		if _, err := r.Reconcile(t.Context(), request(ns, "heartbeat")); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(ours), &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("our Deployment of a deleted Logger still exists (err=%v)", err)
	}
	theirs.Labels[managedByLabel] = "someone" // to read it through the cache
	if err := c.Update(t.Context(), theirs); err != nil {
		t.Errorf("a Deployment we did not make was deleted: %v", err)
	}
}

// A Deployment someone else made under our name is never taken over: the
// cache does not hold it, and the create that answers AlreadyExists is left
// at that.
func TestForeignDeploymentIsNotTakenOver(t *testing.T) {
	l := testLogger()
	foreign := desiredDeployment(l.Namespace, l.Name, l.Spec, "nginx")
	delete(foreign.Labels, managedByLabel)
	writes := 0
	c := managedCache(t, l, foreign)
	r := &LoggerReconciler{Client: interceptor.NewClient(c.(client.WithWatch), countWrites(&writes)), Image: "busybox:1.37"}
	if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); err != nil {
		t.Fatal(err)
	}
	if writes != 1 {
		t.Errorf("%d writes, want 1 (the refused create)", writes)
	}
}

// A Deployment's event queues the Logger its instance label names, in its
// own namespace; one without the label queues nothing.
func TestHandleObjectMapsADeploymentToItsLogger(t *testing.T) {
	labelled := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "lab", Name: "logger-audit",
		Labels: map[string]string{instanceLabel: "audit"}}}
	got := handleObject(context.Background(), labelled)
	if len(got) != 1 || got[0].NamespacedName != (types.NamespacedName{Namespace: "lab", Name: "audit"}) {
		t.Errorf("handleObject(logger-audit labelled audit) = %v, want [lab/audit]", got)
	}
	bare := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "lab", Name: "other"}}
	if got := handleObject(context.Background(), bare); len(got) != 0 {
		t.Errorf("handleObject(a Deployment without %s) = %v, want nothing", instanceLabel, got)
	}
}

package controller

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	examplev2 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v2"
	flightsv1 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/flights/v1"
)

// These tests run Reconcile against controller-runtime's fake client: no
// cluster, just the steps. The fake client knows the status subresource
// (WithStatusSubresource) and finalizers, not the garbage collector or
// generation; the e2e tests check those against a real API server.

const ledgerNS = "ledger"

func testScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, flightsv1.AddToScheme, examplev2.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// testClient is the operator's view of a fake API server: the embedded
// client reads as the Manager's cache does, and Live reads the API server
// itself, as mgr.GetAPIReader() does.
type testClient struct {
	client.Client
	Live client.Reader
}

// newClient is a fake client holding objs, with status subresources as in
// the CRDs, whose writes are counted in *writes, and funcs (optional)
// standing in for the API server's answers.
func newClient(t *testing.T, writes *int, funcs interceptor.Funcs, objs ...client.Object) *testClient {
	count := func() {
		if writes != nil {
			*writes++
		}
	}
	inner := funcs
	managed, _ := labels.Parse(managedBySelector)
	holds, _ := labels.Parse(seatHoldSelector)
	funcs = interceptor.Funcs{
		// Like the Manager's cache (CacheByObject), reads do not see
		// Deployments without the managed-by label, nor ConfigMaps that are
		// not seat holds of the ledger namespace.
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if inner.Get != nil {
				if err := inner.Get(ctx, c, key, o, opts...); err != nil {
					return err
				}
			} else if err := c.Get(ctx, key, o, opts...); err != nil {
				return err
			}
			switch o.(type) {
			case *appsv1.Deployment:
				if !managed.Matches(labels.Set(o.GetLabels())) {
					return apierrors.NewNotFound(appsv1.Resource("deployments"), key.Name)
				}
			case *corev1.ConfigMap:
				if key.Namespace != ledgerNS || !holds.Matches(labels.Set(o.GetLabels())) {
					return apierrors.NewNotFound(corev1.Resource("configmaps"), key.Name)
				}
			}
			return nil
		},
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			count()
			if inner.Create != nil {
				return inner.Create(ctx, c, o, opts...)
			}
			return c.Create(ctx, o, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
			count()
			return c.Update(ctx, o, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			count()
			if inner.Patch != nil {
				return inner.Patch(ctx, c, o, p, opts...)
			}
			return c.Patch(ctx, o, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			count()
			if inner.Delete != nil {
				return inner.Delete(ctx, c, o, opts...)
			}
			return c.Delete(ctx, o, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			count()
			if inner.SubResourcePatch != nil {
				return inner.SubResourcePatch(ctx, c, sub, o, p, opts...)
			}
			return c.SubResource(sub).Patch(ctx, o, p, opts...)
		},
	}
	server := fake.NewClientBuilder().WithScheme(testScheme(t)).
		WithStatusSubresource(&flightsv1.FlightTicket{}, &examplev2.Logger{}).
		WithObjects(objs...).Build()
	return &testClient{Client: interceptor.NewClient(server, funcs), Live: server}
}

func request(ns, name string) ctrl.Request {
	return ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// nextEvent returns the next recorded Event ("Normal Booked ..."), or "".
func nextEvent(r *events.FakeRecorder) string {
	select {
	case e := <-r.Events:
		return e
	default:
		return ""
	}
}

func testTicket() *flightsv1.FlightTicket {
	return &flightsv1.FlightTicket{
		ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "lab", Generation: 1},
		Spec:       flightsv1.FlightTicketSpec{From: "Amsterdam", To: "Lisbon", Number: 2},
	}
}

func ticketReconciler(c *testClient) (*FlightTicketReconciler, *events.FakeRecorder) {
	rec := events.NewFakeRecorder(10)
	return &FlightTicketReconciler{Client: c, Ledger: &SeatLedger{Client: c, Reader: c.Live, Namespace: ledgerNS}, Recorder: rec}, rec
}

func getTicket(t *testing.T, c client.Client) *flightsv1.FlightTicket {
	t.Helper()
	var got flightsv1.FlightTicket
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: "lab", Name: "t"}, &got); err != nil {
		t.Fatal(err)
	}
	return &got
}

func getHold(t *testing.T, c *testClient) (*corev1.ConfigMap, error) {
	t.Helper()
	var cm corev1.ConfigMap
	err := c.Live.Get(t.Context(), types.NamespacedName{Namespace: ledgerNS, Name: "lab.t"}, &cm)
	return &cm, err
}

// A new ticket gets the finalizer, a seat hold and the Booked condition, in
// that order, and a second reconcile writes nothing.
func TestTicketIsBookedOnceThenLeftAlone(t *testing.T) {
	writes := 0
	c := newClient(t, &writes, interceptor.Funcs{}, testTicket())
	r, rec := ticketReconciler(c)

	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	if writes != 3 {
		t.Errorf("%d writes to book a new ticket, want 3 (finalizer, seat hold, status)", writes)
	}
	got := getTicket(t, c)
	if !slices.Contains(got.Finalizers, ticketFinalizer) {
		t.Errorf("finalizers = %v, want %s", got.Finalizers, ticketFinalizer)
	}
	if got.Status.Phase != flightsv1.PhaseBooked || got.Status.Message != "Booked 2 seat(s) from Amsterdam to Lisbon" || got.Status.ObservedGeneration != 1 {
		t.Errorf("status = %+v", got.Status)
	}
	booked := meta.FindStatusCondition(got.Status.Conditions, flightsv1.ConditionBooked)
	if booked == nil || booked.Status != metav1.ConditionTrue || booked.ObservedGeneration != 1 || booked.Reason != flightsv1.ReasonSeatsHeld {
		t.Errorf("Booked condition = %+v", booked)
	}
	if !meta.IsStatusConditionFalse(got.Status.Conditions, flightsv1.ConditionDegraded) {
		t.Errorf("Degraded is not False: %+v", got.Status.Conditions)
	}
	hold, err := getHold(t, c)
	if err != nil {
		t.Fatalf("no seat hold: %v", err)
	}
	if hold.Data["seats"] != "2" || hold.Data["from"] != "Amsterdam" || hold.Data["to"] != "Lisbon" || hold.Data["ticket"] != "lab/t" {
		t.Errorf("seat hold data = %v", hold.Data)
	}
	if e := nextEvent(rec); !strings.HasPrefix(e, "Normal Booked Booked 2 seat(s)") {
		t.Errorf("event = %q, want Normal Booked", e)
	}

	writes = 0
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	if writes != 0 {
		t.Errorf("%d writes for a booked ticket, want 0", writes)
	}
}

// A spec edit (a new generation) changes the hold and the status.
func TestTicketEditRebooks(t *testing.T) {
	c := newClient(t, nil, interceptor.Funcs{}, testTicket())
	r, _ := ticketReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	edited := getTicket(t, c)
	edited.Spec.Number, edited.Generation = 5, 2 // the API server bumps generation
	if err := c.Update(t.Context(), edited); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	got := getTicket(t, c)
	if got.Status.Message != "Booked 5 seat(s) from Amsterdam to Lisbon" || got.Status.ObservedGeneration != 2 {
		t.Errorf("status after the edit = %+v", got.Status)
	}
	if hold, err := getHold(t, c); err != nil || hold.Data["seats"] != "5" {
		t.Errorf("seat hold after the edit: %v (err %v)", hold.Data, err)
	}
}

// A ticket being deleted gives its seats back, then loses the finalizer,
// which lets it go.
func TestDeletedTicketReleasesItsSeats(t *testing.T) {
	c := newClient(t, nil, interceptor.Funcs{}, testTicket())
	r, rec := ticketReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	nextEvent(rec)
	if err := c.Delete(t.Context(), getTicket(t, c)); err != nil {
		t.Fatal(err)
	}
	// The finalizer holds it: Terminating.
	if getTicket(t, c).DeletionTimestamp.IsZero() {
		t.Fatal("the ticket has no deletionTimestamp")
	}
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	if _, err := getHold(t, c); !apierrors.IsNotFound(err) {
		t.Errorf("the seat hold still exists (err=%v)", err)
	}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: "lab", Name: "t"}, &flightsv1.FlightTicket{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ticket still exists after its finalizer ran (err=%v)", err)
	}
	if e := nextEvent(rec); !strings.HasPrefix(e, "Normal Deleted") {
		t.Errorf("event = %q, want Normal Deleted", e)
	}
}

// When the ledger refuses to release, the ticket keeps its finalizer and
// says why, and the error makes the controller retry.
func TestReleaseFailureKeepsTheTicket(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "lab.t", errors.New("no permission"))
	c := newClient(t, nil, interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			if _, ok := o.(*corev1.ConfigMap); ok {
				return forbidden
			}
			return c.Delete(ctx, o, opts...)
		},
	}, testTicket())
	r, rec := ticketReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err != nil {
		t.Fatal(err)
	}
	nextEvent(rec)
	if err := c.Delete(t.Context(), getTicket(t, c)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); !apierrors.IsForbidden(err) {
		t.Errorf("Reconcile returned %v, want the Forbidden error (so that it is retried)", err)
	}
	got := getTicket(t, c)
	if !slices.Contains(got.Finalizers, ticketFinalizer) {
		t.Error("the finalizer was removed although the seats were not given back")
	}
	degraded := meta.FindStatusCondition(got.Status.Conditions, flightsv1.ConditionDegraded)
	if degraded == nil || degraded.Status != metav1.ConditionTrue || degraded.Reason != flightsv1.ReasonReleaseFailed || !strings.Contains(degraded.Message, "no permission") {
		t.Errorf("Degraded condition = %+v", degraded)
	}
	if !meta.IsStatusConditionTrue(got.Status.Conditions, flightsv1.ConditionBooked) {
		t.Error("Booked must stay True: the seats are still held")
	}
	if e := nextEvent(rec); !strings.HasPrefix(e, "Warning Failed") {
		t.Errorf("event = %q, want Warning Failed", e)
	}
}

// When the seats cannot be held, the ticket is not Booked and is Degraded.
func TestHoldFailureIsDegraded(t *testing.T) {
	c := newClient(t, nil, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if _, ok := o.(*corev1.ConfigMap); ok {
				return apierrors.NewServiceUnavailable("ledger closed")
			}
			return c.Create(ctx, o, opts...)
		},
	}, testTicket())
	r, rec := ticketReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "t")); err == nil {
		t.Error("Reconcile returned no error; the hold must be retried")
	}
	got := getTicket(t, c)
	if got.Status.Phase != "" || !meta.IsStatusConditionFalse(got.Status.Conditions, flightsv1.ConditionBooked) ||
		!meta.IsStatusConditionTrue(got.Status.Conditions, flightsv1.ConditionDegraded) {
		t.Errorf("status = %+v, want not booked and Degraded", got.Status)
	}
	if !strings.Contains(got.Status.Message, "ledger closed") {
		t.Errorf("message = %q, want the reason", got.Status.Message)
	}
	if e := nextEvent(rec); !strings.HasPrefix(e, "Warning Failed") {
		t.Errorf("event = %q, want Warning Failed", e)
	}
}

func TestDeletedFlightTicketIsNotAnError(t *testing.T) {
	r, _ := ticketReconciler(newClient(t, nil, interceptor.Funcs{}))
	if _, err := r.Reconcile(t.Context(), request("lab", "gone")); err != nil {
		t.Errorf("reconciling a deleted ticket: %v", err)
	}
}

func TestHoldName(t *testing.T) {
	tk := types.NamespacedName{Namespace: "lab", Name: "t"}
	if got := holdName(tk); got != "lab.t" {
		t.Errorf("holdName = %q, want lab.t", got)
	}
	tk.Name = strings.Repeat("a", 250) + ".b"
	got := holdName(tk)
	if len(got) > 253 || strings.Contains(got, ".-") || !strings.HasPrefix(got, "lab.aaa") {
		t.Errorf("holdName of a long name = %q (%d characters)", got, len(got))
	}
	other := tk
	other.Name = strings.Repeat("a", 250) + ".c"
	if holdName(other) == got {
		t.Error("two long names that differ only at the end share a hold")
	}
}

// ---------------------------------------------------------------- Logger ---

func loggerReconciler(c *testClient) (*LoggerReconciler, *events.FakeRecorder) {
	rec := events.NewFakeRecorder(10)
	return &LoggerReconciler{Client: c, Reader: c.Live, Image: "busybox:1.37", Recorder: rec}, rec
}

func getLogger(t *testing.T, c client.Client) *examplev2.Logger {
	t.Helper()
	var got examplev2.Logger
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: "lab", Name: "heartbeat"}, &got); err != nil {
		t.Fatal(err)
	}
	return &got
}

func getDeployment(t *testing.T, c client.Client) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: "lab", Name: "logger-heartbeat"}, &d); err != nil {
		t.Fatalf("no Deployment: %v", err)
	}
	return &d
}

func conditionStatus(l *examplev2.Logger, typ string) string {
	if c := meta.FindStatusCondition(l.Status.Conditions, typ); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return "absent"
}

func TestLoggerGetsOwnedDeploymentAndConditions(t *testing.T) {
	logger := testLogger()
	logger.UID, logger.Generation = "uid-1", 1
	c := newClient(t, nil, interceptor.Funcs{}, logger)
	r, rec := loggerReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); err != nil {
		t.Fatal(err)
	}
	d := getDeployment(t, c)
	if ref := metav1.GetControllerOf(d); ref == nil || ref.Kind != "Logger" || ref.Name != "heartbeat" || ref.UID != "uid-1" ||
		ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("controller reference = %+v, want the Logger, blocking its deletion", ref)
	}
	if len(d.OwnerReferences) != 1 {
		t.Errorf("%d owner references, want 1", len(d.OwnerReferences))
	}
	if e := nextEvent(rec); !strings.HasPrefix(e, "Normal Created Created deployment logger-heartbeat") {
		t.Errorf("event = %q", e)
	}
	got := getLogger(t, c)
	want := map[string]string{
		examplev2.ConditionAvailable: "False/NoReplicasAvailable",
		examplev2.ConditionDegraded:  "False/AsExpected",
	}
	for typ, w := range want {
		if s := conditionStatus(got, typ); s != w {
			t.Errorf("%s = %s, want %s", typ, s, w)
		}
	}
	if got.Status.State != examplev2.StateUnavailable || got.Status.ObservedGeneration != 1 {
		t.Errorf("state %q, observedGeneration %d", got.Status.State, got.Status.ObservedGeneration)
	}

	// The Deployment controller rolls it out.
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	if err := c.Status().Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); err != nil {
		t.Fatal(err)
	}
	got = getLogger(t, c)
	want[examplev2.ConditionAvailable] = "True/MinimumReplicasAvailable"
	for typ, w := range want {
		if s := conditionStatus(got, typ); s != w {
			t.Errorf("after the rollout, %s = %s, want %s", typ, s, w)
		}
	}
	if got.Status.State != examplev2.StateAvailable {
		t.Errorf("state = %q, want Available", got.Status.State)
	}
}

// A Deployment that carries our labels but no owner (made by stage 05, or
// left by --cascade=orphan) is adopted, not replaced.
func TestLoggerAdoptsItsOrphan(t *testing.T) {
	logger := testLogger()
	orphan := desiredDeployment(logger.Namespace, logger.Name, logger.Spec, "busybox:1.37")
	c := newClient(t, nil, interceptor.Funcs{}, logger, orphan)
	r, rec := loggerReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(getDeployment(t, c)); ref == nil || ref.Name != "heartbeat" {
		t.Errorf("the orphan was not adopted: controller %+v", ref)
	}
	if e := nextEvent(rec); !strings.HasPrefix(e, "Normal Updated Deployment logger-heartbeat adopted") {
		t.Errorf("event = %q", e)
	}
}

// A Deployment someone else made under our name is never taken over; the
// Logger says so. The cache does not hold it (no managed-by label), so the
// create is what finds it: AlreadyExists.
func TestForeignDeploymentIsNotTakenOver(t *testing.T) {
	logger := testLogger()
	foreign := desiredDeployment(logger.Namespace, logger.Name, logger.Spec, "nginx")
	delete(foreign.Labels, managedByLabel)
	c := newClient(t, nil, interceptor.Funcs{}, logger, foreign)
	r, rec := loggerReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); err == nil {
		t.Error("want an error naming the conflict")
	}
	var all appsv1.DeploymentList // a List is not filtered by newClient
	if err := c.List(t.Context(), &all); err != nil || len(all.Items) != 1 {
		t.Fatalf("Deployments %v (%v), want the foreign one only", all.Items, err)
	}
	if d := all.Items[0]; d.Spec.Template.Spec.Containers[0].Image != "nginx" || metav1.GetControllerOf(&d) != nil {
		t.Errorf("the foreign Deployment was changed: image %s, controller %v", d.Spec.Template.Spec.Containers[0].Image, metav1.GetControllerOf(&d))
	}
	if s := conditionStatus(getLogger(t, c), examplev2.ConditionDegraded); s != "True/DeploymentNotOwned" {
		t.Errorf("Degraded = %s, want True/DeploymentNotOwned", s)
	}
	if e := nextEvent(rec); !strings.HasPrefix(e, "Warning Failed") {
		t.Errorf("event = %q, want Warning Failed", e)
	}
}

// A refused create makes the Logger Degraded with the API server's reason,
// and a later success clears it.
func TestRefusedCreateIsDegraded(t *testing.T) {
	refuse := true
	c := newClient(t, nil, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if refuse {
				return apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, o.GetName(), errors.New("exceeded quota: no-deployments"))
			}
			return c.Create(ctx, o, opts...)
		},
	}, testLogger())
	r, _ := loggerReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); !apierrors.IsForbidden(err) {
		t.Errorf("Reconcile returned %v, want the Forbidden error", err)
	}
	got := getLogger(t, c)
	degraded := meta.FindStatusCondition(got.Status.Conditions, examplev2.ConditionDegraded)
	if degraded == nil || degraded.Status != metav1.ConditionTrue || degraded.Reason != examplev2.ReasonCreateFailed || !strings.Contains(degraded.Message, "exceeded quota") {
		t.Errorf("Degraded = %+v", degraded)
	}
	for typ, w := range map[string]string{examplev2.ConditionAvailable: "False/NoDeployment"} {
		if s := conditionStatus(got, typ); s != w {
			t.Errorf("%s = %s, want %s", typ, s, w)
		}
	}

	refuse = false
	if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); err != nil {
		t.Fatal(err)
	}
	if s := conditionStatus(getLogger(t, c), examplev2.ConditionDegraded); s != "False/AsExpected" {
		t.Errorf("after the create succeeded, Degraded = %s", s)
	}
}

// While a Logger is being deleted (foreground deletion keeps it until the
// garbage collector has removed its Deployment), nothing is created.
func TestLoggerBeingDeletedIsLeftToTheGarbageCollector(t *testing.T) {
	logger := testLogger()
	logger.Finalizers = []string{metav1.FinalizerDeleteDependents}
	logger.DeletionTimestamp = ptr.To(metav1.Now())
	writes := 0
	c := newClient(t, &writes, interceptor.Funcs{}, logger)
	r, _ := loggerReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); err != nil {
		t.Fatal(err)
	}
	if writes != 0 {
		t.Errorf("%d writes for a Logger being deleted, want 0", writes)
	}
}

// A Logger still in a lagging cache, already deleted on the API server (its
// Deployment's delete event from the garbage collector came first): no
// Deployment is made for it.
func TestDeletedLoggerInALaggingCacheGetsNoDeployment(t *testing.T) {
	logger := testLogger()
	logger.UID = "uid-1"
	c := newClient(t, nil, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if l, ok := o.(*examplev2.Logger); ok {
				logger.DeepCopyInto(l) // the cache has not seen the delete
				return nil
			}
			return c.Get(ctx, key, o, opts...)
		},
	}) // the API server holds no Logger
	r, _ := loggerReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); err != nil {
		t.Fatal(err)
	}
	var all appsv1.DeploymentList
	if err := c.List(t.Context(), &all); err != nil || len(all.Items) != 0 {
		t.Errorf("Deployments %v (%v), want none: its Logger is gone", all.Items, err)
	}
}

// Our own Deployment with the managed-by label removed has left the cache:
// the create is refused as AlreadyExists, and the Deployment, still
// controlled by the Logger, gets its labels back rather than being left
// alone.
func TestOwnDeploymentWithoutItsLabelIsRepaired(t *testing.T) {
	logger := testLogger()
	logger.UID = "uid-1"
	c := newClient(t, nil, interceptor.Funcs{}, logger)
	r, rec := loggerReconciler(c)
	if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); err != nil {
		t.Fatal(err)
	}
	nextEvent(rec)
	d := getDeployment(t, c)
	delete(d.Labels, managedByLabel)
	if err := c.Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(t.Context(), request("lab", "heartbeat")); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	if got := getDeployment(t, c).Labels[managedByLabel]; got != managedBy {
		t.Errorf("label %s=%q, want %q back", managedByLabel, got, managedBy)
	}
	if s := conditionStatus(getLogger(t, c), examplev2.ConditionDegraded); s != "False/AsExpected" {
		t.Errorf("Degraded = %s, want False/AsExpected", s)
	}
	if e := nextEvent(rec); !strings.HasPrefix(e, "Normal Updated Deployment logger-heartbeat repaired") {
		t.Errorf("event = %q", e)
	}
}

package e2e

import (
	"context"
	"strconv"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// TestStatusSubresource: with the /status subresource, spec and status are
// written through different doors. A write to the ticket cannot change its
// status, a write to /status cannot change anything else, generation moves
// only with the spec, and RBAC can allow the one without the other. (Stage
// 05's TestWeaknessStatusSharesTheObject shows the opposite of each.)
func TestStatusSubresource(t *testing.T) {
	var (
		w       *world
		tickets dynamic.ResourceInterface
		booked  *unstructured.Unstructured
	)
	get := func(t *testing.T) *unstructured.Unstructured {
		t.Helper()
		u, err := tickets.Get(context.Background(), "split", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	f := features.New("status lives in its own subresource").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w = newWorld(t, cfg, "status")
			tickets = w.C.Dynamic.Resource(ticketGVR).Namespace(w.NS)
			w.start(t)
			if _, err := tickets.Create(ctx, newTicketObject("split", "Oslo", "Bergen", 1), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			booked = waitCondition(t, w, ticketGVR, "split", "Booked", "True", "SeatsHeld")
			return ctx
		}).
		Assess("booking writes status without bumping generation", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// Created at generation 1, and still there after the operator
			// wrote the booking (stage 05 is at 2 by now).
			if g := booked.GetGeneration(); g != 1 {
				t.Errorf("generation after booking = %d, want 1", g)
			}
			if og, _, _ := unstructured.NestedInt64(booked.Object, "status", "observedGeneration"); og != 1 {
				t.Errorf("status.observedGeneration = %d, want 1", og)
			}
			return ctx
		}).
		Assess("an update of the ticket that carries a changed status leaves status unchanged", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			u := get(t)
			before, _, _ := unstructured.NestedString(u.Object, "status", "message")
			if err := unstructured.SetNestedField(u.Object, int64(3), "spec", "number"); err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedField(u.Object, "written by a user", "status", "message"); err != nil {
				t.Fatal(err)
			}
			stored, err := tickets.Update(ctx, u, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// The API server's answer is what it stored: the spec edit, and
			// the status as it was.
			if n, _, _ := unstructured.NestedInt64(stored.Object, "spec", "number"); n != 3 {
				t.Errorf("spec.number = %d, want 3", n)
			}
			if msg, _, _ := unstructured.NestedString(stored.Object, "status", "message"); msg != before {
				t.Errorf("status.message = %q after an update of the ticket, want it unchanged (%q)", msg, before)
			}
			if g := stored.GetGeneration(); g != 2 {
				t.Errorf("generation after a spec edit = %d, want 2", g)
			}
			return ctx
		}).
		Assess("observedGeneration catches up with generation after the spec edit", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			harness.Eventually(t, converge, "status for generation 2", func(ctx context.Context) (bool, string, error) {
				u := get(t)
				og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
				msg, _, _ := unstructured.NestedString(u.Object, "status", "message")
				c, _ := conditionOf(u, "Booked")
				return og == 2 && c.ObservedGeneration == 2 && c.Status == "True" && msg == "Booked 3 seat(s) from Oslo to Bergen",
					"observedGeneration " + strconv.FormatInt(og, 10) + ", Booked " + c.String(), nil
			})
			return ctx
		}).
		Assess("a status patch does not bump generation", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// The test's own identity is cluster-admin, which may write
			// status; the next step shows who may not.
			patched, err := tickets.Patch(ctx, "split", types.MergePatchType, []byte(`{"status":{"message":"patched through /status"},"spec":{"number":9}}`), metav1.PatchOptions{}, "status")
			if err != nil {
				t.Fatal(err)
			}
			if msg, _, _ := unstructured.NestedString(patched.Object, "status", "message"); msg != "patched through /status" {
				t.Errorf("status.message = %q, want the patched one", msg)
			}
			// ...and /status ignores everything but status.
			if n, _, _ := unstructured.NestedInt64(patched.Object, "spec", "number"); n != 3 {
				t.Errorf("spec.number = %d after a patch of /status, want 3", n)
			}
			if g := patched.GetGeneration(); g != 2 {
				t.Errorf("generation after a status patch = %d, want 2", g)
			}
			return ctx
		}).
		Assess("the operator writes its own status back over one written by someone else", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			// A status-only update reaches Reconcile (no predicate drops
			// it), which finds the status wrong and writes it again.
			harness.Eventually(t, converge, "the booking message back", func(ctx context.Context) (bool, string, error) {
				msg, _, _ := unstructured.NestedString(get(t).Object, "status", "message")
				return msg == "Booked 3 seat(s) from Oslo to Bergen", "status.message " + strconv.Quote(msg), nil
			})
			loggers := w.C.Dynamic.Resource(loggerGVR).Namespace(w.NS)
			if _, err := loggers.Create(ctx, newLoggerObject("echo", 1), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitCondition(t, w, loggerGVR, "echo", "Available", "True", "MinimumReplicasAvailable")
			if _, err := loggers.Patch(ctx, "echo", types.MergePatchType, []byte(`{"status":{"state":"Unavailable"}}`), metav1.PatchOptions{}, "status"); err != nil {
				t.Fatal(err)
			}
			harness.Eventually(t, converge, "the Logger's state back", func(ctx context.Context) (bool, string, error) {
				u, err := loggers.Get(ctx, "echo", metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				state, _, _ := unstructured.NestedString(u.Object, "status", "state")
				return state == "Available", "status.state " + state, nil
			})
			return ctx
		}).
		Assess("a user with the generated editor role may edit tickets, and gets 403 on their status", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			alice := impersonated(t, w, "alice", "flightticket_editor_role.yaml")
			if _, err := alice.Patch(ctx, "split", types.MergePatchType, []byte(`{"spec":{"number":4}}`), metav1.PatchOptions{}); err != nil {
				t.Errorf("the editor could not edit the spec: %v", err)
			}
			_, err := alice.Patch(ctx, "split", types.MergePatchType, []byte(`{"status":{"message":"written by alice"}}`), metav1.PatchOptions{}, "status")
			if !apierrors.IsForbidden(err) {
				t.Errorf("the editor's status patch: err=%v, want 403 Forbidden", err)
			} else {
				t.Logf("as alice: %v", err)
			}
			// The viewer reads, and writes nothing.
			bob := impersonated(t, w, "bob", "flightticket_viewer_role.yaml")
			if _, err := bob.Get(ctx, "split", metav1.GetOptions{}, "status"); err != nil {
				t.Errorf("the viewer could not read status: %v", err)
			}
			if _, err := bob.Patch(ctx, "split", types.MergePatchType, []byte(`{"spec":{"number":5}}`), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
				t.Errorf("the viewer's spec patch: err=%v, want 403 Forbidden", err)
			}
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// impersonated binds a copy of a generated user role (config/rbac/<file>)
// to user in the world's namespace, and returns a client for tickets there
// that acts as that user (rest.Config.Impersonate: the API server
// authorizes each request as the user). The copy has a name of its own and
// no aggregation labels, so that nothing shared in the cluster changes.
func impersonated(t *testing.T, w *world, user, file string) dynamic.ResourceInterface {
	t.Helper()
	ctx := context.Background()
	role := readClusterRole(t, file)
	role.ObjectMeta = metav1.ObjectMeta{Name: role.Name + "-" + w.NS}
	if _, err := w.C.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.C.Kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	// A RoleBinding grants a ClusterRole's rules in one namespace only.
	if _, err := w.C.Kube.RbacV1().RoleBindings(w.NS).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server's RBAC authorizer learns of the binding through a watch
	// of its own, a moment after the create returns. Both roles allow get:
	// once a SubjectAccessReview says the user may get tickets, every rule of
	// the binding is in force.
	harness.Eventually(t, converge, user+"'s RoleBinding to take effect", func(ctx context.Context) (bool, string, error) {
		ok, err := mayDo(ctx, w.C, user, []string{"system:authenticated"}, "get", ticketGVR.Group, ticketGVR.Resource, w.NS)
		return ok, "allowed=" + strconv.FormatBool(ok), err
	})
	cfg := rest.CopyConfig(w.C.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn.Resource(ticketGVR).Namespace(w.NS)
}

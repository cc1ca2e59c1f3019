package e2e

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// The weaknesses stage 06 fixes, asserted as they are, so that the README's
// claims stay true and 06's tests have a before to compare with.

// TestWeaknessStatusSharesTheObject: without a status subresource, status is
// written like any other part of the object. So the operator's status write
// moves metadata.generation (which can then no longer say "the spec
// changed"), and anyone allowed to edit a ticket can write its status too;
// the operator only puts it back afterwards.
func TestWeaknessStatusSharesTheObject(t *testing.T) {
	f := features.New("status is an ordinary part of the object").
		Assess("the booking bumps generation, and a user may overwrite status", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, err := harness.NewClients(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			ns := c.Namespace(t, "weak-status")
			bin := harness.BuildOperator(t, harness.OperatorPackage(stage.Package))
			harness.StartOperator(t, cfg.KubeconfigFile(), bin, append([]string{"--namespace", ns}, stage.Args...)...)

			createTicket(t, c, ns, "shared")
			waitBooked(t, c, ns, "shared")
			u, err := c.Dynamic.Resource(ticketGVR).Namespace(ns).Get(ctx, "shared", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Created at generation 1; the spec never changed, yet the one
			// status write made it 2.
			if g := u.GetGeneration(); g != 2 {
				t.Errorf("generation after booking = %d, want 2: the status write counts as a change of the object", g)
			}

			// A user's write to status is stored as sent...
			hacked, err := c.Dynamic.Resource(ticketGVR).Namespace(ns).Patch(ctx, "shared", types.MergePatchType,
				[]byte(`{"status":{"message":"written by a user"}}`), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("a user's status write was refused: %v", err)
			}
			if msg, _, _ := unstructured.NestedString(hacked.Object, "status", "message"); msg != "written by a user" {
				t.Errorf("the stored message is %q; without a status subresource the user's write should stand", msg)
			}
			// ...until the operator notices and writes the booking again.
			waitBooked(t, c, ns, "shared")
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// TestWeaknessNoOwnerReference: the Logger's Deployment names its Logger only
// in a label. Kubernetes' garbage collector follows owner references, not
// labels, so nothing but this operator will ever delete it: a Logger deleted
// while the operator is away leaves its Deployment running until the operator
// comes back (TestDeletedWhileStopped shows the comeback).
func TestWeaknessNoOwnerReference(t *testing.T) {
	f := features.New("children are cleaned by hand").
		Assess("the Deployment has no owner reference", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, err := harness.NewClients(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			ns := c.Namespace(t, "weak-owner")
			bin := harness.BuildOperator(t, harness.OperatorPackage(stage.Package))
			harness.StartOperator(t, cfg.KubeconfigFile(), bin, append([]string{"--namespace", ns}, stage.Args...)...)
			logger := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.com/v1", "kind": "Logger",
				"metadata": map[string]any{"name": "unowned"},
				"spec":     map[string]any{"name": "unowned", "timeInterval": int64(5)},
			}}
			if _, err := c.Dynamic.Resource(loggerGVR).Namespace(ns).Create(ctx, logger, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			harness.Eventually(t, converge, "Deployment logger-unowned", func(ctx context.Context) (bool, string, error) {
				d, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, "logger-unowned", metav1.GetOptions{})
				if err != nil {
					return false, "", client404(err)
				}
				if refs := d.OwnerReferences; len(refs) != 0 {
					t.Errorf("the Deployment has owner references %v; stage 05 leaves them to stage 06", refs)
				}
				if d.Labels["app.kubernetes.io/instance"] != "unowned" {
					t.Errorf("the Deployment's only link to its Logger, the instance label, is %q", d.Labels["app.kubernetes.io/instance"])
				}
				return true, "", nil
			})
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// TestWeaknessLabelStripped: the managed-by label removed from a Logger's
// Deployment takes it out of the Manager's cache. The create that follows is
// answered AlreadyExists and Reconcile returns success ("its event will
// follow", but none does), so a change of the Logger's replicas never
// reaches the Deployment and the Logger's status stays as it was. Deleting
// the Logger looks for the Deployment in the cache, finds none, and leaves it
// running: an orphan.
func TestWeaknessLabelStripped(t *testing.T) {
	behaviour.LabelStripped(t, stage, false)
}

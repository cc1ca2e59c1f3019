package e2e

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/behaviour"
)

var loggerGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "loggers"}

// TestDeletedWhileStopped: a Logger deleted while the operator is down has
// no delete event anyone could have seen. Stage 05 still removes its
// Deployment, because reconciling is level-based: at start-up the Deployment
// watch lists the orphan, maps it to its Logger by label, and Reconcile finds
// the Logger gone. (Stage 02, which acts on delete events, leaves it behind.)
// Only Deployments the operator made are touched: one without the managed-by
// label but with the same name pattern stays.
func TestDeletedWhileStopped(t *testing.T) {
	f := features.New("a Logger deleted while the operator is stopped").
		Assess("its Deployment is deleted when the operator starts again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, err := harness.NewClients(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			ns := c.Namespace(t, "orphan")
			bin := harness.BuildOperator(t, harness.OperatorPackage(stage.Package))
			run := func() *harness.Operator {
				return harness.StartOperator(t, cfg.KubeconfigFile(), bin, append([]string{"--namespace", ns}, stage.Args...)...)
			}

			op := run()
			logger := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.com/v1", "kind": "Logger",
				"metadata": map[string]any{"name": "left"},
				"spec":     map[string]any{"name": "left", "timeInterval": int64(5)},
			}}
			if _, err := c.Dynamic.Resource(loggerGVR).Namespace(ns).Create(ctx, logger, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			harness.Eventually(t, converge, "Deployment logger-left", func(ctx context.Context) (bool, string, error) {
				_, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, "logger-left", metav1.GetOptions{})
				return err == nil, "", client404(err)
			})
			// Someone else's Deployment that merely looks like one of ours.
			foreign := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "logger-stranger", Labels: map[string]string{"app.kubernetes.io/instance": "stranger"}},
				Spec: appsv1.DeploymentSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "stranger"}},
				},
			}
			foreign.Spec.Template.Labels = map[string]string{"app": "stranger"}
			foreign.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox:1.37"}}
			if _, err := c.Kube.AppsV1().Deployments(ns).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}

			if err := op.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := c.Dynamic.Resource(loggerGVR).Namespace(ns).Delete(ctx, "left", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			// Nothing runs now: the Deployment is an orphan.
			if _, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, "logger-left", metav1.GetOptions{}); err != nil {
				t.Fatalf("the orphan should still exist while no operator runs: %v", err)
			}

			restarted := run()
			harness.Eventually(t, converge, "the orphan Deployment to be deleted", func(ctx context.Context) (bool, string, error) {
				_, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, "logger-left", metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, "", nil
				}
				return false, "logger-left still exists", err
			})
			restarted.WaitForLog(converge, "deleted deployment of a deleted logger")
			if _, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, "logger-stranger", metav1.GetOptions{}); err != nil {
				t.Errorf("a Deployment the operator did not make was touched: %v", err)
			}
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// TestNamesakeLeftAlone: someone else's Deployment logger-audit, without the
// managed-by label, and a Logger audit created and deleted. As in 04, the
// create is answered AlreadyExists and Reconcile leaves it alone, and the
// delete looks in the cache, which never holds it: the Deployment stays as
// its owners made it, with the same UID.
func TestNamesakeLeftAlone(t *testing.T) {
	behaviour.Namesake(t, stage, behaviour.NamesakeOutcome{})
}

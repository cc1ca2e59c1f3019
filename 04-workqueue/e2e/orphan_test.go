package e2e

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// TestLoggerDeletedWhileStoppedIsCleanedUp: stages 02 and 03 delete a
// Logger's Deployment on the Logger's DELETED event, and an operator that was
// not running never receives it. Stage 04's queue holds names, not events:
// at start-up the Deployment informer lists the orphan, handleObject queues
// its Logger's key, and syncLogger, finding no Logger, deletes the
// Deployment. A Deployment of the same name that the operator did not make
// (no managed-by label) is never touched.
func TestLoggerDeletedWhileStoppedIsCleanedUp(t *testing.T) {
	f := features.New("a Logger deleted while the operator is stopped").
		Assess("its Deployment is deleted when the operator starts again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w := newWorld(t, cfg, "orphan")
			a := w.start(t)
			w.createLogger(t, "orphaned", 1)
			w.waitDeployment(t, "logger-orphaned", 1)
			if err := a.Stop(); err != nil {
				t.Fatalf("stopping the operator: %v", err)
			}

			w.deleteLogger(t, "orphaned")
			harness.Eventually(t, converge, "Logger orphaned to be gone", func(ctx context.Context) (bool, string, error) {
				_, err := w.C.Dynamic.Resource(loggersGVR).Namespace(w.NS).Get(ctx, "orphaned", metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, "", nil
				}
				return false, "still there", err
			})
			// Someone else's Deployment that merely looks like a Logger's.
			foreign := w.foreignDeployment(t, "logger-stranger", "stranger")

			b := w.start(t)
			harness.Eventually(t, converge, "logger-orphaned to be deleted", func(ctx context.Context) (bool, string, error) {
				return w.deployment(t, "logger-orphaned") == nil, "still there", nil
			})
			b.WaitForLog(converge, "deleted Deployment", w.NS+"/logger-orphaned")
			// The operator's informer lists only managed-by Deployments, so it
			// never even sees the stranger.
			if d := w.deployment(t, foreign.Name); d == nil || d.UID != foreign.UID {
				t.Errorf("%s, which the operator did not make, was deleted or replaced", foreign.Name)
			}
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

// foreignDeployment creates a Deployment with the name pattern and instance
// label of a Logger's, but without the managed-by label.
func (w *world) foreignDeployment(t *testing.T, name, instance string) *appsv1.Deployment {
	t.Helper()
	labels := map[string]string{"app.kubernetes.io/instance": instance}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	d.Spec.Template.Labels = labels
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox:1.37"}}
	d, err := w.C.Kube.AppsV1().Deployments(w.NS).Create(context.Background(), d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestNamesakeLeftAlone: someone else's Deployment logger-audit, without the
// managed-by label, and a Logger audit created and deleted. Stage 02 took the
// Deployment over and deleted it with the Logger, stage 03 deleted it with
// the Logger. Here the create is answered AlreadyExists and the sync leaves
// it alone, and the delete looks in the cache, which never holds it: the
// Deployment stays as its owners made it, with the same UID.
func TestNamesakeLeftAlone(t *testing.T) {
	behaviour.Namesake(t, stage, behaviour.NamesakeOutcome{})
}

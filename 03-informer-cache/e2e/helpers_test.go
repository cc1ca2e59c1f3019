package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-flow/operator-flow/harness"
)

// converge bounds every wait for the operator.
const converge = 60 * time.Second

var loggersGVR = harness.LoggerGVR

// world is one test's namespace, clients and operator binary
// (harness.World), with this package's shorthands.
type world struct{ *harness.World }

func newWorld(t *testing.T, cfg *envconf.Config, prefix string) *world {
	t.Helper()
	return &world{harness.NewWorld(t, cfg, prefix, pkg)}
}

// start runs an operator that watches only this world's namespace.
func (w *world) start(t *testing.T, args ...string) *harness.Operator {
	t.Helper()
	return w.Start(t, args...)
}

// createLogger creates a Logger that prints its own name every 10 seconds.
func (w *world) createLogger(t *testing.T, name string, replicas int64) {
	t.Helper()
	w.Create(t, loggersGVR, harness.NewLogger(name, name, 10, replicas))
}

func (w *world) deleteLogger(t *testing.T, name string) {
	t.Helper()
	if err := w.C.Dynamic.Resource(loggersGVR).Namespace(w.NS).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Logger %s: %v", name, err)
	}
}

// deployment returns a Deployment, or nil when there is none.
func (w *world) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	d, err := w.C.Kube.AppsV1().Deployments(w.NS).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitDeployment waits until the Deployment exists with the given replicas.
func (w *world) waitDeployment(t *testing.T, name string, replicas int32) {
	t.Helper()
	harness.Eventually(t, converge, fmt.Sprintf("Deployment %s with %d replicas", name, replicas), func(ctx context.Context) (bool, string, error) {
		d, err := w.C.Kube.AppsV1().Deployments(w.NS).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not found", nil
		} else if err != nil {
			return false, "", err
		}
		return *d.Spec.Replicas == replicas, fmt.Sprintf("replicas=%d", *d.Spec.Replicas), nil
	})
}

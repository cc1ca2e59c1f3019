package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-flow/operator-flow/harness"
)

// converge bounds every wait for the operator.
const converge = 60 * time.Second

var (
	ticketsGVR = schema.GroupVersionResource{Group: "flights.com", Version: "v1", Resource: "flighttickets"}
	loggersGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "loggers"}
)

// world is one test's namespace, clients and operator binary.
type world struct {
	c          *harness.Clients
	ns         string
	kubeconfig string
	bin        string
}

func newWorld(t *testing.T, cfg *envconf.Config, prefix string) *world {
	t.Helper()
	c, err := harness.NewClients(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &world{c: c, ns: c.Namespace(t, prefix), kubeconfig: cfg.KubeconfigFile(), bin: harness.BuildOperator(t, pkg)}
}

// start runs an operator that watches only this world's namespace.
func (w *world) start(t *testing.T, args ...string) *harness.Operator {
	return harness.StartOperator(t, w.kubeconfig, w.bin, append([]string{"--namespace", w.ns}, args...)...)
}

func (w *world) createTicket(t *testing.T, name, from, to string, number int64) {
	t.Helper()
	w.create(t, ticketsGVR, map[string]any{
		"apiVersion": "flights.com/v1", "kind": "FlightTicket",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"from": from, "to": to, "number": number},
	})
}

func (w *world) createLogger(t *testing.T, name string, replicas int64) {
	t.Helper()
	w.create(t, loggersGVR, map[string]any{
		"apiVersion": "example.com/v1", "kind": "Logger",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"name": name, "timeInterval": int64(10), "replicas": replicas},
	})
}

func (w *world) create(t *testing.T, gvr schema.GroupVersionResource, obj map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	if _, err := w.c.Dynamic.Resource(gvr).Namespace(w.ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s %s: %v", gvr.Resource, u.GetName(), err)
	}
}

func (w *world) deleteLogger(t *testing.T, name string) {
	t.Helper()
	if err := w.c.Dynamic.Resource(loggersGVR).Namespace(w.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Logger %s: %v", name, err)
	}
}

// status reads a string field of an object's status, "" if there is none.
func (w *world) status(ctx context.Context, gvr schema.GroupVersionResource, name, field string) (string, error) {
	u, err := w.c.Dynamic.Resource(gvr).Namespace(w.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	s, _, _ := unstructured.NestedString(u.Object, "status", field)
	return s, nil
}

func (w *world) waitStatus(t *testing.T, gvr schema.GroupVersionResource, name, field, want string) {
	t.Helper()
	harness.Eventually(t, converge, fmt.Sprintf("%s %s status.%s=%s", gvr.Resource, name, field, want), func(ctx context.Context) (bool, string, error) {
		got, err := w.status(ctx, gvr, name, field)
		return got == want, fmt.Sprintf("status.%s=%q", field, got), err
	})
}

// deployment returns a Deployment, or nil when there is none.
func (w *world) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	d, err := w.c.Kube.AppsV1().Deployments(w.ns).Get(context.Background(), name, metav1.GetOptions{})
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
		d, err := w.c.Kube.AppsV1().Deployments(w.ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, "not found", nil
		} else if err != nil {
			return false, "", err
		}
		return *d.Spec.Replicas == replicas, fmt.Sprintf("replicas=%d", *d.Spec.Replicas), nil
	})
}

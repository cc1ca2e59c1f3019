package harness

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
)

// World is one test's world: a namespace of its own, the clients to reach
// it, and an operator binary to run on it. The shared behaviour suite and
// each stage's own e2e tests build on it.
type World struct {
	C  *Clients
	NS string
	// Kubeconfig is what operators started by Start use: the test
	// cluster's, unless a test points it at a proxy.
	Kubeconfig string
	Bin        string
}

// NewWorld creates the namespace (deleted when t ends) and builds the
// operator from the Go package pkg (see OperatorPackage).
func NewWorld(t testing.TB, cfg *envconf.Config, prefix, pkg string) *World {
	t.Helper()
	c, err := NewClients(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &World{C: c, NS: c.Namespace(t, prefix), Kubeconfig: cfg.KubeconfigFile(), Bin: BuildOperator(t, pkg)}
}

// Start runs an operator that watches only the world's namespace, with args
// after --namespace; it is stopped when t ends.
func (w *World) Start(t testing.TB, args ...string) *Operator {
	t.Helper()
	return StartOperator(t, w.Kubeconfig, w.Bin, append([]string{"--namespace", w.NS}, args...)...)
}

// Create creates an object in the world's namespace.
func (w *World) Create(t testing.TB, gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	t.Helper()
	if err := w.TryCreate(gvr, u); err != nil {
		t.Fatal(err)
	}
}

// TryCreate is Create for goroutines other than the test's own, where
// t.Fatal must not be called.
func (w *World) TryCreate(gvr schema.GroupVersionResource, u *unstructured.Unstructured) error {
	if _, err := w.C.Dynamic.Resource(gvr).Namespace(w.NS).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating %s %s/%s: %w", gvr.Resource, w.NS, u.GetName(), err)
	}
	return nil
}

// Delete deletes an object of the world's namespace.
func (w *World) Delete(t testing.TB, gvr schema.GroupVersionResource, name string) {
	t.Helper()
	if err := w.C.Dynamic.Resource(gvr).Namespace(w.NS).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting %s %s/%s: %v", gvr.Resource, w.NS, name, err)
	}
}

// Get returns an object, or nil when it does not exist.
func (w *World) Get(ctx context.Context, gvr schema.GroupVersionResource, name string) (*unstructured.Unstructured, error) {
	u, err := w.C.Dynamic.Resource(gvr).Namespace(w.NS).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

// Deployment returns a Deployment, or nil when it does not exist.
func (w *World) Deployment(ctx context.Context, name string) (*appsv1.Deployment, error) {
	d, err := w.C.Kube.AppsV1().Deployments(w.NS).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return d, err
}

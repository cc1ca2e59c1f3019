package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// fieldManager names the tests in managedFields and in the API server's audit
// trail, so that nobody mistakes a test's write for an operator's.
const fieldManager = "operator-flow-e2e"

// Clients are the API clients a test needs. Tests use the dynamic client for
// the custom kinds, so that one test suite fits every stage, whether the stage
// has Go types (03+) or not (01, 02).
type Clients struct {
	Config  *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// NewClients builds Clients from a rest.Config.
func NewClients(cfg *rest.Config) (*Clients, error) {
	cfg = rest.CopyConfig(cfg)
	// Tests create hundreds of objects at once; client-go's default of 5
	// requests per second would make them measure the client, not the
	// operator. A caller that chose a limit (the bench sets none) keeps it.
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 200, 400
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{
		Config:  cfg,
		Kube:    kube,
		Dynamic: dyn,
		mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc)),
	}, nil
}

// Resource maps an object's kind to the client for its resource, in namespace
// ns when the kind is namespaced.
func (c *Clients) Resource(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// A CRD installed after the last discovery: ask again.
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		return c.Dynamic.Resource(m.Resource), nil
	}
	return c.Dynamic.Resource(m.Resource).Namespace(ns), nil
}

// ReadObjects decodes every YAML document in a file.
func ReadObjects(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// YAMLFiles lists the .yaml files of a folder, sorted, or returns path itself
// when it is a file.
func YAMLFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	files, err := filepath.Glob(filepath.Join(path, "*.yaml"))
	sort.Strings(files)
	return files, err
}

// ApplyFile server-side applies every object in a file (into namespace ns for
// namespaced kinds), as `kubectl apply --server-side` would.
func (c *Clients) ApplyFile(ctx context.Context, path, ns string) error {
	objs, err := ReadObjects(path)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := c.Apply(ctx, o, ns); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// Apply server-side applies one object.
func (c *Clients) Apply(ctx context.Context, o *unstructured.Unstructured, ns string) error {
	r, err := c.Resource(o.GroupVersionKind(), ns)
	if err != nil {
		return err
	}
	_, err = r.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	return err
}

// InstallCRDs applies the CRDs in path (a file or a folder) and waits until the
// API server reports each one Established, i.e. ready to serve its kind.
func (c *Clients) InstallCRDs(ctx context.Context, path string) error {
	files, err := YAMLFiles(path)
	if err != nil {
		return err
	}
	var names []string
	for _, f := range files {
		objs, err := ReadObjects(f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if err := c.Apply(ctx, o, ""); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			names = append(names, o.GetName())
		}
	}
	crds := c.Dynamic.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			u, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, x := range conds {
				m, _ := x.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not Established: %w", name, err)
		}
	}
	// New kinds exist now; forget what discovery said before.
	c.mapper.Reset()
	return nil
}

// WaitNodeReady waits until a node reports the Ready condition.
func (c *Clients) WaitNodeReady(ctx context.Context, name string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

// Namespace creates a namespace of its own for one test, named after the test,
// and deletes it when the test ends (passed or failed). Objects in it go with
// it, so tests never see each other's leftovers.
func (c *Clients) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	ns, err := c.Kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: prefix + "-",
			Labels:       map[string]string{"operator-flow/e2e": "true"},
		},
	}, metav1.CreateOptions{FieldManager: fieldManager})
	if err != nil {
		t.Fatalf("creating a test namespace: %v", err)
	}
	t.Cleanup(func() {
		// Background deletion: the namespace controller removes its content.
		// Nothing waits for it, so a slow cleanup never slows the next test.
		err := c.Kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// Eventually polls cond every 100 ms until it returns true, and fails the test
// when timeout passes first. cond returns a description of what it saw; the
// last one is printed on failure, so that a timeout says what was wrong.
//
// It fails at once, without waiting out timeout, once an operator that t (or
// a test t runs within) started has crashed: it panicked, or it exited
// although the test neither stopped it nor announced the exit
// (Operator.Crash). What the test waits for will most likely not come then,
// and the panic says why. The crash is looked up
// before cond runs: a crash seen then happened before cond looked, so a test
// that waits for the exit itself, or for what the exit leaves behind, sees
// its condition met rather than the crash.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	var last, crash string
	start := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		crashed := crashReport(t)
		ok, seen, err := cond(ctx)
		if !ok && crashed != "" {
			// Whatever cond saw, or failed to read, the crash explains.
			crash, last = crashed, seen
			return false, errors.New(crashed)
		}
		if deadline, ok := ctx.Deadline(); err != nil && ok && time.Until(deadline) < time.Second {
			// The timeout ran out during this attempt (client-go refuses to
			// start a request it cannot finish in time): what the previous
			// attempt saw says more than this error.
			return false, nil
		}
		last = seen
		return ok, err
	})
	if crash != "" {
		// The crash first: it is the reason, and labs/check shows only a
		// failure's first lines.
		seen := ""
		if last = strings.TrimSpace(last); last != "" {
			seen = "; last seen: " + last
		}
		t.Fatalf("%s\nso stopped waiting for %s after %.1fs of %s%s", crash, what, time.Since(start).Seconds(), timeout, seen)
	}
	if err != nil {
		t.Fatalf("waiting %s for %s: %v; last seen: %s", timeout, what, err, strings.TrimSpace(last))
	}
}

package trace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

var kindResource = map[string]string{"Logger": "loggers", "FlightTicket": "flighttickets"}

// Manifest returns what the trace applies for o: the sample of that kind and
// name in samplesDir, or else the object as it is in the cluster now (read
// in the version the stage stores it in), with what the API server and the
// operator added taken away.
func Manifest(ctx context.Context, samplesDir, kubeconfig string, stage Stage, o Object) ([]byte, error) {
	files, _ := filepath.Glob(filepath.Join(samplesDir, "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var u unstructured.Unstructured
		if yaml.Unmarshal(b, &u.Object) == nil && kindResource[u.GetKind()] == o.Resource && u.GetName() == o.Name {
			return b, nil
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = ToolUserAgent
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	u, err := c.Resource(stage.gvr(o.Resource)).Namespace(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("OBJ=%s: there is no such object in the cluster and no sample of that name in %s; create it first (kubectl apply -f your.yaml), then trace it", o, samplesDir)
	}
	if err != nil {
		return nil, err
	}
	clean := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
		"metadata": map[string]any{"name": u.GetName()},
		"spec":     u.Object["spec"],
	}}
	if l := u.GetLabels(); len(l) > 0 {
		clean.SetLabels(l)
	}
	return yaml.Marshal(clean.Object)
}

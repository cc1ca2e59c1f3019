package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/etcd"
)

// TestEtcdGet: etcd.Get finds what the API server wrote, under the keys it
// writes to: a ConfigMap as protobuf (built-in kinds are stored so),
// a Logger as JSON that names the version it is stored in.
func TestEtcdGet(t *testing.T) {
	c := clients(t)
	ctx := context.Background()
	ns := c.Namespace(t, "etcd")
	if _, err := c.Kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "plain"},
		Data:       map[string]string{"greeting": "stored-as-protobuf"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Dynamic.Resource(harness.LoggerGVR).Namespace(ns).Create(ctx, harness.NewLogger("stored", "stored-as-json", 5, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A write is in etcd once the API server has answered it: no waiting.
	// (The namespace may also hold kube-root-ca.crt, which
	// kube-controller-manager puts in every namespace.)
	cms := etcd.Get(ctx, t, "/registry/configmaps/"+ns+"/")
	cm, ok := cms["/registry/configmaps/"+ns+"/plain"]
	if !ok {
		t.Fatalf("etcd holds no /registry/configmaps/%s/plain; under /registry/configmaps/%s/ it holds %v", ns, ns, keys(cms))
	}
	if !bytes.HasPrefix(cm, []byte("k8s\x00")) || !bytes.Contains(cm, []byte("stored-as-protobuf")) {
		t.Errorf("the ConfigMap's stored bytes are not protobuf (k8s\\x00...) holding its data: %q", cm)
	}

	ls := etcd.Get(ctx, t, "/registry/example.com/loggers/"+ns+"/")
	raw, ok := ls["/registry/example.com/loggers/"+ns+"/stored"]
	if !ok || len(ls) != 1 {
		t.Fatalf("etcd holds %v under /registry/example.com/loggers/%s/, want exactly .../stored", keys(ls), ns)
	}
	var stored struct {
		APIVersion string `json:"apiVersion"`
		Spec       struct {
			Name string `json:"name"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatalf("the Logger's stored bytes are not JSON: %v: %q", err, raw)
	}
	if stored.APIVersion != "example.com/v1" || stored.Spec.Name != "stored-as-json" {
		t.Errorf("the Logger is stored as apiVersion %q with spec.name %q, want example.com/v1 and stored-as-json", stored.APIVersion, stored.Spec.Name)
	}
}

func keys(kv map[string][]byte) []string {
	var ks []string
	for k := range kv {
		ks = append(ks, k)
	}
	return ks
}

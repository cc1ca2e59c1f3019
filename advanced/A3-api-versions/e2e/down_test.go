package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-flow/operator-flow/harness"
)

// TestConversionWebhookDown stops the operator, and with it the conversion
// webhook. Whatever needs a Logger in a version other than the one it is
// stored in fails; whatever does not, works. Then the operator comes back
// on the same address and certificate, and so does every read.
func TestConversionWebhookDown(t *testing.T) {
	withCluster(t, "reads and writes while no conversion webhook answers", func(t *testing.T, cfg *envconf.Config) {
		w := harness.NewWorld(t, cfg, "a3-down", modulePackage)
		op, opts := operatorConverter(t, w)
		ctx := context.Background()
		v2 := w.C.Dynamic.Resource(loggerV2).Namespace(w.NS)
		v1 := w.C.Dynamic.Resource(loggerGVR).Namespace(w.NS)
		if _, err := v2.Create(ctx, newV2Logger("stored-as-v2", "5s"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitEnv(t, w, "stored-as-v2", "5")
		if err := op.Stop(); err != nil {
			t.Fatal(err)
		}

		// The Logger is stored as v2: reading it as v2 needs no
		// conversion, and works.
		if _, err := v2.Get(ctx, "stored-as-v2", metav1.GetOptions{}); err != nil {
			t.Errorf("a v2 read of a Logger stored as v2 failed with the webhook down: %v", err)
		}
		// As v1 it must be converted: reads, lists and writes through v1
		// fail, naming the webhook.
		const failed = "conversion webhook for example.com/v2, Kind=Logger failed"
		if _, err := v1.Get(ctx, "stored-as-v2", metav1.GetOptions{}); err == nil || !strings.Contains(err.Error(), failed) {
			t.Errorf("a v1 read with the webhook down: %v, want %q", err, failed)
		} else {
			t.Logf("a v1 read: %v", err)
		}
		if _, err := v1.Create(ctx, harness.NewLogger("written-as-v1", "x", 5, 1), metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "conversion webhook for example.com/v1, Kind=Logger failed") {
			t.Errorf("a v1 create with the webhook down: %v, want a conversion failure (it is stored as v2)", err)
		}
		// A v2 write is stored as it is.
		if _, err := v2.Create(ctx, newV2Logger("written-as-v2", "5s"), metav1.CreateOptions{}); err != nil {
			t.Errorf("a v2 create with the webhook down: %v", err)
		}
		// A list may come from the API server's watch cache, which keeps
		// the objects of each version converted as they arrived. The v2
		// create above arrives in v1's cache too, and must be converted:
		// from then on, v1 lists fail as well.
		harness.Eventually(t, converge, "a v1 list to fail", func(ctx context.Context) (bool, string, error) {
			l, err := v1.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Logf("a v1 list: %v", err)
				return strings.Contains(err.Error(), "conversion webhook"), err.Error(), nil
			}
			return false, fmt.Sprintf("listed %d", len(l.Items)), nil
		})

		// The operator back, on the address and with the certificate the
		// CRD names: v1 reads work again.
		w.Start(t, serving(opts)...)
		harness.Eventually(t, converge, "a v1 read to work again", func(ctx context.Context) (bool, string, error) {
			_, err := v1.Get(ctx, "stored-as-v2", metav1.GetOptions{})
			if err != nil {
				return false, err.Error(), nil
			}
			return true, "", nil
		})
	})
}

// newV2Logger is a v2 Logger with one replica.
func newV2Logger(name, interval string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v2",
		"kind":       "Logger",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"name": name, "interval": interval, "replicas": int64(1)},
	}}
}

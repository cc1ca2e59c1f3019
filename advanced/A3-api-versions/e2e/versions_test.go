package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	examplev1 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v1"
	"github.com/operator-flow/operator-flow/harness"
)

// operatorConverter starts the module's operator with its webhook server on
// a free port, with a fresh certificate, and points the Logger CRD's
// conversion at it until t ends: the operator serves the conversion, as in
// the lab.
func operatorConverter(t *testing.T, w *harness.World) (*harness.Operator, *envtest.WebhookInstallOptions) {
	t.Helper()
	opts := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1"}
	if os.Getenv("CLUSTER") == "kind" {
		opts.LocalServingHost = kindGateway(t)
	}
	if err := opts.PrepWithoutInstalling(); err != nil {
		t.Fatalf("preparing the webhook's certificate: %v", err)
	}
	t.Cleanup(func() { _ = opts.Cleanup() })
	op := w.Start(t, serving(opts)...)
	useConverter(t, w.C.Config, opts)
	return op, opts
}

// serving is the operator's flags to serve its webhooks at opts' address
// with its certificate, the metrics and health endpoints off.
func serving(opts *envtest.WebhookInstallOptions) []string {
	return append(append([]string{}, stage.Args[:2]...),
		fmt.Sprintf("--webhook-bind-address=%s:%d", opts.LocalServingHost, opts.LocalServingPort),
		"--webhook-cert-dir="+opts.LocalServingCertDir)
}

// TestSideBySide: kubectl on v1 and the operator on v2 work on the same
// Logger, each seeing the other's writes, while the operator converts.
func TestSideBySide(t *testing.T) {
	withCluster(t, "v1 and v2 clients side by side", func(t *testing.T, cfg *envconf.Config) {
		w := harness.NewWorld(t, cfg, "a3-versions", modulePackage)
		op, _ := operatorConverter(t, w)
		manifest := filepath.Join(t.TempDir(), "heartbeat.yaml")
		if err := os.WriteFile(manifest, []byte(`apiVersion: example.com/v1
kind: Logger
metadata:
  name: heartbeat
spec:
  name: heartbeat
  timeInterval: 7
`), 0o600); err != nil {
			t.Fatal(err)
		}

		// 1. kubectl creates a v1 Logger, and is warned that v1 is
		// deprecated (the CRD's deprecationWarning).
		_, stderr, err := kubectl(t, w.Kubeconfig, "apply", "-n", w.NS, "-f", manifest)
		if err != nil {
			t.Fatalf("kubectl apply of a v1 Logger: %v\n%s", err, stderr)
		}
		if !strings.Contains(stderr, "Warning: example.com/v1 Logger is deprecated") {
			t.Errorf("kubectl printed no deprecation warning for v1:\n%s", stderr)
		}

		// 2. The operator reads it as v2 ("7s") and makes the Deployment.
		waitEnv(t, w, "heartbeat", "7")

		// 3. kubectl, on v1, sees the status the operator wrote through v2.
		harness.Eventually(t, converge, "kubectl on v1 to see the Logger Available", func(context.Context) (bool, string, error) {
			out, _, err := kubectl(t, w.Kubeconfig, "get", "loggers.v1.example.com", "heartbeat", "-n", w.NS, "-o", "jsonpath={.status.state}")
			return err == nil && out == "Available", "state " + out, nil
		})

		// 4. A v2 client sets an interval v1 cannot hold. The operator
		// follows it; kubectl on v1 reads 2 seconds, and the annotation
		// that keeps the exact value.
		patchV2(t, w, "heartbeat", `{"spec":{"interval":"1500ms"}}`)
		waitEnv(t, w, "heartbeat", "1.5")
		v1 := getV1(t, w, "heartbeat")
		if v1.Spec.TimeInterval != 2 || v1.Annotations[examplev1.IntervalAnnotation] != "1500ms" {
			t.Fatalf("kubectl on v1 reads timeInterval %d and annotation %q, want 2 and 1500ms", v1.Spec.TimeInterval, v1.Annotations[examplev1.IntervalAnnotation])
		}

		// 5. kubectl on v1 changes replicas: v2 keeps its 1500ms, and the
		// operator scales the Deployment.
		if _, stderr, err := kubectl(t, w.Kubeconfig, "patch", "loggers.v1.example.com", "heartbeat", "-n", w.NS, "--type=merge", "-p", `{"spec":{"replicas":3}}`); err != nil {
			t.Fatalf("kubectl patch through v1: %v\n%s", err, stderr)
		}
		u, err := w.Get(context.Background(), loggerV2, "heartbeat")
		if err != nil || u == nil {
			t.Fatalf("reading the Logger as v2: %v", err)
		}
		interval, _, _ := unstructured.NestedString(u.Object, "spec", "interval")
		replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		if interval != "1500ms" || replicas != 3 {
			t.Fatalf("after kubectl's v1 patch of replicas, v2 reads interval %q, replicas %d; want 1500ms, 3", interval, replicas)
		}
		harness.Eventually(t, converge, "the Deployment to have 3 replicas", func(ctx context.Context) (bool, string, error) {
			d, err := w.Deployment(ctx, "logger-heartbeat")
			if err != nil || d == nil || d.Spec.Replicas == nil {
				return false, "no Deployment", err
			}
			return *d.Spec.Replicas == 3, fmt.Sprintf("replicas %d", *d.Spec.Replicas), nil
		})

		// 6. The operator served those conversions: its log has a line
		// for each, this Logger's v2 turned into v1 among them.
		line := op.WaitForLog(converge, "\tconversion\t", `"name": "heartbeat"`, `"from": "example.com/v2"`, `"to": "example.com/v1"`, `"converted": true`)
		t.Logf("the operator's log: %s", line)
	})
}

// waitEnv waits until the Logger's Deployment runs sleep with seconds.
func waitEnv(t *testing.T, w *harness.World, logger, seconds string) {
	t.Helper()
	harness.Eventually(t, converge, "Deployment logger-"+logger+" with TIME_INTERVAL="+seconds, func(ctx context.Context) (bool, string, error) {
		d, err := w.Deployment(ctx, "logger-"+logger)
		if err != nil || d == nil {
			return false, "no Deployment", err
		}
		got := timeInterval(d)
		return got == seconds, "TIME_INTERVAL=" + got, nil
	})
}

// timeInterval is the Deployment's TIME_INTERVAL.
func timeInterval(d *appsv1.Deployment) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == "TIME_INTERVAL" {
				return e.Value
			}
		}
	}
	return ""
}

// patchV2 merge-patches a Logger through v2.
func patchV2(t *testing.T, w *harness.World, name, patch string) {
	t.Helper()
	if _, stderr, err := kubectl(t, w.Kubeconfig, "patch", "loggers.v2.example.com", name, "-n", w.NS, "--type=merge", "-p", patch); err != nil {
		t.Fatalf("patching Logger %s through v2: %v\n%s", name, err, stderr)
	}
}

// getV1 reads a Logger as v1, into v1's Go type.
func getV1(t *testing.T, w *harness.World, name string) *examplev1.Logger {
	t.Helper()
	var l examplev1.Logger
	u, err := w.Get(context.Background(), loggerGVR, name)
	if err != nil || u == nil {
		t.Fatalf("reading Logger %s as v1: %v", name, err)
	}
	if err := runtimeFromUnstructured(u, &l); err != nil {
		t.Fatal(err)
	}
	return &l
}

package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/admission"
)

// TestWebhookDown stops the operator that serves the webhook. With
// failurePolicy Fail the API server refuses every Logger write it cannot get
// an answer for, while a write to loggers/status, which the rules leave out,
// still passes. With Ignore, a Logger over the cap is let in unchecked.
func TestWebhookDown(t *testing.T) {
	withCluster(t, "the webhook is down", func(t *testing.T, cfg *envconf.Config) {
		w := harness.NewWorld(t, cfg, "a2-down", modulePackage)
		wh := installWebhook(t, w.C, w.NS, admissionregistrationv1.Fail)
		op := w.Start(t, append(append([]string{}, stage.Args[:2]...), wh.args...)...)
		waitAdmissionActive(t, w.C, w.NS)
		setNamespaceLabels(t, w.C, w.NS, map[string]string{admission.MaxReplicasLabel: "1", admission.TeamLabel: "payments"})
		w.Create(t, loggerGVR, harness.NewLogger("before", "before", 5, 1))
		if err := op.Stop(); err != nil {
			t.Fatalf("stopping the operator: %v", err)
		}
		ctx := context.Background()
		loggers := w.C.Dynamic.Resource(loggerGVR).Namespace(w.NS)

		t.Run("Fail: a Logger create is refused", func(t *testing.T) {
			_, err := loggers.Create(ctx, harness.NewLogger("while-down", "while-down", 5, 1), metav1.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
				t.Fatalf(`want a refusal that says "failed calling webhook", got %v`, err)
			}
			t.Logf("kubectl would print: Error from server (InternalError): %v", err)
		})

		t.Run("Fail: a status write still passes", func(t *testing.T) {
			patch := []byte(`{"status":{"state":"Unavailable"}}`)
			u, err := loggers.Patch(ctx, "before", types.MergePatchType, patch, metav1.PatchOptions{}, "status")
			if err != nil {
				t.Fatalf("writing loggers/status with the webhook down: %v", err)
			}
			if s, _, _ := unstructured.NestedString(u.Object, "status", "state"); s != "Unavailable" {
				t.Errorf("want status.state Unavailable, got %q", s)
			}
		})

		t.Run("Ignore: a Logger over the cap is let in", func(t *testing.T) {
			wh.setFailurePolicy(t, w.C, admissionregistrationv1.Ignore)
			// The new policy reaches the API server's admission a moment
			// after it is stored: a dry run says when.
			harness.Eventually(t, converge, "failurePolicy Ignore to take effect", func(ctx context.Context) (bool, string, error) {
				o, err := probe(ctx, w.C, w.NS)
				if err != nil {
					return false, err.Error(), nil
				}
				return o.allowed, o.String(), nil
			})
			u, err := loggers.Create(ctx, harness.NewLogger("unchecked", "unchecked", 5, 5), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("want the over-cap Logger let in with failurePolicy Ignore, got %v", err)
			}
			if r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); r != 5 {
				t.Errorf("want the stored replicas 5, got %d", r)
			}
			if team := u.GetLabels()[admission.TeamLabel]; team != "" {
				t.Errorf("want no team label (the defaulter did not run), got %q", team)
			}
		})
	})
}

// TestWebhookHung stops the operator that serves the webhook with SIGSTOP:
// a hung process, not a dead one. The kernel still accepts the API
// server's connections and nothing answers, so the API server waits for
// the webhook's timeoutSeconds (config/webhook/manifests.yaml) and then,
// with failurePolicy Fail, refuses the write. The test measures how long a
// Logger create waits: at least most of timeoutSeconds (else it was not a
// hang) and at most timeoutSeconds and a margin.
func TestWebhookHung(t *testing.T) {
	withCluster(t, "the webhook hangs", func(t *testing.T, cfg *envconf.Config) {
		w := harness.NewWorld(t, cfg, "a2-hung", modulePackage)
		wh := installWebhook(t, w.C, w.NS, admissionregistrationv1.Fail)
		timeout := time.Duration(*wh.opts.MutatingWebhooks[0].Webhooks[0].TimeoutSeconds) * time.Second
		// Started here, not with w.Start: the test signals the process.
		cmd := exec.Command(w.Bin, append([]string{"--kubeconfig", w.Kubeconfig, "--namespace", w.NS}, append(append([]string{}, stage.Args[:2]...), wh.args...)...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() {
			// Resumed, then asked to stop; killed if it does not.
			_ = cmd.Process.Signal(syscall.SIGCONT)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("the operator did not shut down cleanly on SIGTERM: %v", err)
				}
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				t.Errorf("the operator did not exit within 15s of SIGCONT and SIGTERM; killed (%v)", <-done)
			}
			if t.Failed() {
				t.Logf("operator output:\n%s", out.String())
			}
		})
		waitAdmissionActive(t, w.C, w.NS)
		if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err := w.C.Dynamic.Resource(loggerGVR).Namespace(w.NS).Create(context.Background(), harness.NewLogger("while-hung", "while-hung", 5, 1), metav1.CreateOptions{})
		waited := time.Since(start)
		t.Logf("a Logger create waited %s for the hung webhook (timeoutSeconds %s): %v", waited.Round(10*time.Millisecond), timeout, err)
		if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
			t.Fatalf(`want a refusal that says "failed calling webhook", got %v`, err)
		}
		if margin := 2 * time.Second; waited < timeout-margin || waited > timeout+margin {
			t.Errorf("the create waited %s; want timeoutSeconds %s, give or take %s", waited, timeout, margin)
		}
	})
}

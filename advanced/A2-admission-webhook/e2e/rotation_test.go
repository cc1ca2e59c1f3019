package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/admission"
)

// TestCertificateRotation replaces the serving certificate under a running
// operator. The order that keeps every request working: first the CA
// bundle trusts the old and the new certificate, then the files are
// replaced (controller-runtime's certwatcher sees the change and serves the
// new pair, no restart), then the bundle drops the old one.
func TestCertificateRotation(t *testing.T) {
	withCluster(t, "the serving certificate is rotated", func(t *testing.T, cfg *envconf.Config) {
		w := harness.NewWorld(t, cfg, "a2-rotation", modulePackage)
		wh := installWebhook(t, w.C, w.NS, admissionregistrationv1.Fail)
		op := w.Start(t, append(append([]string{}, stage.Args[:2]...), wh.args...)...)
		waitAdmissionActive(t, w.C, w.NS)
		op.WaitForLog(converge, "Updated current TLS certificate")

		// A new CA and serving certificate, for the same names and port.
		next := &envtest.WebhookInstallOptions{
			LocalServingHost: wh.opts.LocalServingHost,
			LocalServingPort: wh.opts.LocalServingPort,
		}
		if err := next.PrepWithoutInstalling(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = next.Cleanup() })
		old := wh.opts.LocalServingCAData

		// 1. Trust both.
		wh.setCABundle(t, w.C, append(append([]byte{}, old...), next.LocalServingCAData...))
		// 2. Replace the files: the key first, then the certificate.
		// Between the two writes the pair does not match; certwatcher
		// logs that and keeps serving the old pair until it reads one
		// that does.
		for _, f := range []string{"tls.key", "tls.crt"} {
			b, err := os.ReadFile(filepath.Join(next.LocalServingCertDir, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(wh.opts.LocalServingCertDir, f), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		addr := fmt.Sprintf("%s:%d", wh.opts.LocalServingHost, wh.opts.LocalServingPort)
		harness.Eventually(t, converge, "the webhook server to present the new certificate", func(context.Context) (bool, string, error) {
			served, err := servedCertificate(addr)
			if err != nil {
				return false, err.Error(), nil
			}
			return bytes.Equal(served, firstDER(next.LocalServingCAData)), "still the old one", nil
		})
		if op.Exited() {
			t.Fatal("the operator exited")
		}
		// 3. Trust only the new one: admission goes on.
		wh.setCABundle(t, w.C, next.LocalServingCAData)
		setNamespaceLabels(t, w.C, w.NS, map[string]string{admission.TeamLabel: "after-rotation"})
		if n := op.CountLog("Updated current TLS certificate"); n < 2 {
			t.Errorf("want certwatcher's line for the start and for the new pair, got %d:\n%s", n, op.Log())
		}
	})
}

// setCABundle sets the CA bundle of both configurations' webhooks.
func (w *webhook) setCABundle(t *testing.T, c *harness.Clients, bundle []byte) {
	t.Helper()
	ctx := context.Background()
	adm := c.Kube.AdmissionregistrationV1()
	m, err := adm.MutatingWebhookConfigurations().Get(ctx, w.mutating, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Webhooks {
		m.Webhooks[i].ClientConfig.CABundle = bundle
	}
	if _, err := adm.MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	v, err := adm.ValidatingWebhookConfigurations().Get(ctx, w.validating, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range v.Webhooks {
		v.Webhooks[i].ClientConfig.CABundle = bundle
	}
	if _, err := adm.ValidatingWebhookConfigurations().Update(ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// servedCertificate is the DER of the certificate a TLS server presents.
func servedCertificate(addr string) ([]byte, error) {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only reads what is presented
	if err != nil {
		return nil, err
	}
	der := conn.ConnectionState().PeerCertificates[0].Raw
	return der, conn.Close()
}

// firstDER is the DER of the first certificate of a PEM bundle.
func firstDER(b []byte) []byte {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil
	}
	return block.Bytes
}

package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/admission"
)

// converge is how long a test waits for the cluster or the operator to
// catch up.
const converge = 60 * time.Second

var loggerGVR = harness.LoggerGVR

// withCluster runs body as a test of the e2e-framework environment, which
// hands it the cluster's configuration.
func withCluster(t *testing.T, name string, body func(t *testing.T, cfg *envconf.Config)) {
	t.Helper()
	harness.Env().Test(t, features.New("A2").Assess(name, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
		body(t, cfg)
		return ctx
	}).Feature())
}

// webhook is one test's installation of A2's webhook: the two
// configurations of config/webhook/manifests.yaml under names of their own,
// matching only the test's namespace (webhook configurations are
// cluster-wide, and the e2e suite shares one cluster: a stopped webhook with
// failurePolicy Fail must never refuse another test's Loggers), and the
// serving certificate the operator is to present.
type webhook struct {
	opts       *envtest.WebhookInstallOptions
	mutating   string
	validating string
	// args are the operator's flags to serve it.
	args []string
}

// installWebhook creates the webhook configurations for namespace ns with
// failure policy fp, and deletes them when t ends. Certificates and the CA
// bundle come from controller-runtime's envtest.WebhookInstallOptions: a
// fresh self-signed CA and a serving certificate, written to a temporary
// folder, the CA bundle set in each configuration's clientConfig, and a free
// port. The API server calls https://<host>:<port>/<path>: on kwok it runs
// on this machine, and host is 127.0.0.1; on kind it runs in the node's
// container, and host is this machine's address on the Docker network kind
// made (its gateway), where the operator then listens.
func installWebhook(t *testing.T, c *harness.Clients, ns string, fp admissionregistrationv1.FailurePolicyType) *webhook {
	t.Helper()
	opts := &envtest.WebhookInstallOptions{
		Paths:            []string{harness.RepoPath("advanced", "A2-admission-webhook", "config", "webhook", "manifests.yaml")},
		LocalServingHost: "127.0.0.1",
	}
	if os.Getenv("CLUSTER") == "kind" {
		opts.LocalServingHost = kindGateway(t)
	}
	// The CA, the certificate (for localhost and the host), a free port,
	// and clientConfig rewritten to a URL with the CA bundle.
	if err := opts.PrepWithoutInstalling(); err != nil {
		t.Fatalf("preparing the webhook's certificates: %v", err)
	}
	t.Cleanup(func() { _ = opts.Cleanup() })
	w := &webhook{opts: opts, mutating: ns + "-mutating", validating: ns + "-validating"}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
	// envtest writes the URL as https://host:port/ + the service's path,
	// which starts with a slash already: one of the two goes.
	scope := func(cc *admissionregistrationv1.WebhookClientConfig) {
		u, err := url.Parse(*cc.URL)
		if err != nil {
			t.Fatalf("envtest's webhook URL: %v", err)
		}
		u.Path = "/" + strings.TrimLeft(u.Path, "/")
		cc.URL = ptr.To(u.String())
	}
	for _, m := range opts.MutatingWebhooks {
		m.Name = w.mutating
		for i := range m.Webhooks {
			m.Webhooks[i].NamespaceSelector = selector
			m.Webhooks[i].FailurePolicy = ptr.To(fp)
			scope(&m.Webhooks[i].ClientConfig)
		}
	}
	for _, v := range opts.ValidatingWebhooks {
		v.Name = w.validating
		for i := range v.Webhooks {
			v.Webhooks[i].NamespaceSelector = selector
			v.Webhooks[i].FailurePolicy = ptr.To(fp)
			scope(&v.Webhooks[i].ClientConfig)
		}
	}
	if len(opts.MutatingWebhooks) != 1 || len(opts.ValidatingWebhooks) != 1 {
		t.Fatalf("config/webhook/manifests.yaml: want one mutating and one validating configuration, got %d and %d", len(opts.MutatingWebhooks), len(opts.ValidatingWebhooks))
	}
	// Deleted first thing at cleanup, before the namespace and the
	// operator go (cleanups run last registered, first run).
	t.Cleanup(func() {
		ctx := context.Background()
		adm := c.Kube.AdmissionregistrationV1()
		if err := adm.MutatingWebhookConfigurations().Delete(ctx, w.mutating, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting MutatingWebhookConfiguration %s: %v", w.mutating, err)
		}
		if err := adm.ValidatingWebhookConfigurations().Delete(ctx, w.validating, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting ValidatingWebhookConfiguration %s: %v", w.validating, err)
		}
	})
	if err := opts.Install(c.Config); err != nil {
		t.Fatalf("installing the webhook configurations: %v", err)
	}
	w.args = []string{
		"--webhook-bind-address=" + fmt.Sprintf("%s:%d", opts.LocalServingHost, opts.LocalServingPort),
		"--webhook-cert-dir=" + opts.LocalServingCertDir,
	}
	return w
}

// setFailurePolicy changes both configurations' failure policy.
func (w *webhook) setFailurePolicy(t *testing.T, c *harness.Clients, fp admissionregistrationv1.FailurePolicyType) {
	t.Helper()
	ctx := context.Background()
	adm := c.Kube.AdmissionregistrationV1()
	m, err := adm.MutatingWebhookConfigurations().Get(ctx, w.mutating, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range m.Webhooks {
		m.Webhooks[i].FailurePolicy = ptr.To(fp)
	}
	if _, err := adm.MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	v, err := adm.ValidatingWebhookConfigurations().Get(ctx, w.validating, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range v.Webhooks {
		v.Webhooks[i].FailurePolicy = ptr.To(fp)
	}
	if _, err := adm.ValidatingWebhookConfigurations().Update(ctx, v, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// kindGateway is the IPv4 gateway of Docker's "kind" network: the address
// of this machine as the kind node container sees it (with Docker Engine on
// Linux; with Docker Desktop the gateway is in Docker's VM).
func kindGateway(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("docker", "network", "inspect", "kind", "--format", "{{range .IPAM.Config}}{{.Gateway}} {{end}}").Output()
	if err != nil {
		t.Fatalf("docker network inspect kind: %v", err)
	}
	for _, gw := range strings.Fields(string(out)) {
		if !strings.Contains(gw, ":") {
			return gw
		}
	}
	t.Fatalf("docker network kind has no IPv4 gateway: %q", out)
	return ""
}

// outcome is what admission made of one write.
type outcome struct {
	allowed bool
	message string // the refusal's, when refused
	team    string // the stored (or dry-run) Logger's example.com/team label
}

func (o outcome) String() string {
	if o.allowed {
		return fmt.Sprintf("allowed, team %q", o.team)
	}
	return "refused: " + o.message
}

// result turns a write's answer into an outcome. An error that is not an
// admission verdict (a lost connection, say) is returned as the error.
func result(u *unstructured.Unstructured, err error) (outcome, error) {
	if err == nil {
		return outcome{allowed: true, team: u.GetLabels()[admission.TeamLabel]}, nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return outcome{}, err
	}
	return outcome{message: err.Error()}, nil
}

// probeReplicas is the probe Logger's spec.replicas: the CRD's maximum, over
// any cap below it.
const probeReplicas = 10

// probe is a server-side dry-run create of a Logger with probeReplicas and
// no labels: admission runs in full, nothing is stored.
func probe(ctx context.Context, c *harness.Clients, ns string) (outcome, error) {
	u, err := c.Dynamic.Resource(loggerGVR).Namespace(ns).Create(ctx, harness.NewLogger("probe", "probe", 5, probeReplicas),
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return result(u, err)
}

// reflects says whether a probe's outcome is the rule's answer for a
// namespace with these labels.
func reflects(o outcome, labels map[string]string) bool {
	limit, capped := labels[admission.MaxReplicasLabel]
	if !capped {
		return o.allowed && o.team == labels[admission.TeamLabel]
	}
	n, err := strconv.Atoi(limit)
	switch {
	case err != nil || n < 0:
		return !o.allowed && strings.Contains(o.message, "whole number")
	case probeReplicas > n:
		return !o.allowed && strings.Contains(o.message, "cap of "+limit)
	default:
		return o.allowed && o.team == labels[admission.TeamLabel]
	}
}

// setNamespaceLabels gives ns exactly these labels, besides the ones every
// test namespace has, and waits until admission acts on them: both the
// webhook's cache and the API server's namespace lister (which a policy's
// namespaceObject comes from) catch up a moment after the write. A
// server-side dry run shows when.
func setNamespaceLabels(t *testing.T, c *harness.Clients, ns string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	n, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keep := map[string]string{}
	for _, k := range []string{corev1.LabelMetadataName, "operator-flow/e2e"} {
		if v, ok := n.Labels[k]; ok {
			keep[k] = v
		}
	}
	maps.Copy(keep, labels)
	n.Labels = keep
	if _, err := c.Kube.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, converge, fmt.Sprintf("admission in %s to act on namespace labels %v", ns, labels), func(ctx context.Context) (bool, string, error) {
		o, err := probe(ctx, c, ns)
		if err != nil {
			return false, err.Error(), nil
		}
		return reflects(o, labels), o.String(), nil
	})
}

// waitAdmissionActive waits until admission in ns is in force: the namespace
// is given a team, and a dry-run create comes back with it. That takes the
// configuration (new configurations reach the API server's admission a
// moment after they are stored) and, for a webhook, a server that answers.
func waitAdmissionActive(t *testing.T, c *harness.Clients, ns string) {
	t.Helper()
	setNamespaceLabels(t, c, ns, map[string]string{admission.TeamLabel: "admission-active"})
}

// TestNamespaceAndLoggerInOneApply: `kubectl apply -f` of one file that
// holds a new Namespace with a team label and a Logger in it. The Logger's
// create reaches the webhook a moment after the Namespace's, when the
// operator's cache may not have the namespace yet; the webhook then reads
// it from the API server (LoggerWebhook.namespaceLabels), and the Logger is
// admitted with the namespace's team.
func TestNamespaceAndLoggerInOneApply(t *testing.T) {
	withCluster(t, "a namespace and a Logger in one apply", func(t *testing.T, cfg *envconf.Config) {
		w := harness.NewWorld(t, cfg, "a2-one-apply", modulePackage)
		fresh := w.NS + "-fresh"
		wh := installWebhook(t, w.C, w.NS, admissionregistrationv1.Fail)
		// Both configurations match the new namespace too, before the
		// operator starts: waitAdmissionActive then finds them in force.
		ctx := context.Background()
		selector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: []string{w.NS, fresh},
		}}}
		adm := w.C.Kube.AdmissionregistrationV1()
		m, err := adm.MutatingWebhookConfigurations().Get(ctx, wh.mutating, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range m.Webhooks {
			m.Webhooks[i].NamespaceSelector = selector
		}
		if _, err := adm.MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		v, err := adm.ValidatingWebhookConfigurations().Get(ctx, wh.validating, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range v.Webhooks {
			v.Webhooks[i].NamespaceSelector = selector
		}
		if _, err := adm.ValidatingWebhookConfigurations().Update(ctx, v, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		op := w.Start(t, append(append([]string{}, stage.Args[:2]...), wh.args...)...)
		waitAdmissionActive(t, w.C, w.NS)

		manifest := filepath.Join(t.TempDir(), "namespace-and-logger.yaml")
		if err := os.WriteFile(manifest, []byte(fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
  labels:
    %[2]s: payments
---
apiVersion: %[3]s
kind: Logger
metadata:
  name: heartbeat
  namespace: %[1]s
spec:
  name: heartbeat
  timeInterval: 5
`, fresh, admission.TeamLabel, loggerGVR.GroupVersion())), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			err := w.C.Kube.CoreV1().Namespaces().Delete(context.Background(), fresh, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting namespace %s: %v", fresh, err)
			}
		})
		cmd := exec.Command(harness.RepoPath("bin", "kubectl"), "--kubeconfig", w.Kubeconfig, "--cache-dir", t.TempDir(), "apply", "-f", manifest)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply of a Namespace and a Logger in it: %v\n%s", err, out)
		}
		u, err := w.C.Dynamic.Resource(loggerGVR).Namespace(fresh).Get(ctx, "heartbeat", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if team := u.GetLabels()[admission.TeamLabel]; team != "payments" {
			t.Errorf("want the Logger defaulted with team payments, got labels %v", u.GetLabels())
		}
		t.Logf("the webhook's answer: %s", op.WaitForLog(converge, "admission allowed", `"webhook": "mutate"`, `"namespace": "`+fresh+`"`))
	})
}

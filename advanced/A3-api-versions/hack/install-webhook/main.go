// Command install-webhook gives module A3's operator what its webhooks need
// besides its code, without cert-manager: a self-signed CA and a serving
// certificate (written to --cert-dir as tls.crt and tls.key, where the
// operator's --webhook-cert-dir reads them); the Logger CRD of --crds with
// its conversion webhook's clientConfig set to https://<host>:<port>/convert
// and the CA bundle; and A2's two admission webhook configurations of
// config/webhook/manifests.yaml, with the same CA bundle and URLs. It is
// controller-runtime's own code for this, the envtest package's
// WebhookInstallOptions and CRDInstallOptions, pointed at any cluster. The
// admission webhooks match one namespace (--namespace) or every one; the
// conversion webhook converts every Logger, in every namespace. --delete
// removes the admission configurations again.
//
// The API server must reach --host: 127.0.0.1 on the kwok cluster, whose
// API server runs on this machine. It acts only on a cluster of this course
// (courseConfig).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	examplev1 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v1"
	examplev2 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v2"
)

// The configurations' names in the cluster.
const (
	mutatingName   = "operator-flow-a3-mutating"
	validatingName = "operator-flow-a3-validating"
)

func main() {
	// --kubeconfig is registered by controller-runtime's config package,
	// which envtest imports; else $KUBECONFIG.
	manifests := flag.String("manifests", "advanced/A3-api-versions/config/webhook/manifests.yaml", "the webhook configurations controller-gen wrote")
	crds := flag.String("crds", "advanced/A3-api-versions/config/crd", "the CRDs to install, the Logger's with the conversion webhook")
	namespace := flag.String("namespace", "", "match Loggers of this namespace only (default: every namespace)")
	certDir := flag.String("cert-dir", ".state/webhook-A3", "where to write tls.crt and tls.key for the operator's --webhook-cert-dir")
	host := flag.String("host", "127.0.0.1", "the address the API server calls the webhook at, and the certificate's")
	port := flag.Int("port", 9443, "the webhook server's port (the operator's --webhook-bind-address=<host>:<port>)")
	failurePolicy := flag.String("failure-policy", "Fail", "what the API server does when the webhook does not answer: Fail or Ignore")
	keep := flag.Bool("keep-cert", false, "keep the certificate in --cert-dir (the one the operator serves) and only write the configurations")
	del := flag.Bool("delete", false, "delete the webhook configurations and stop")
	flag.Parse()
	kubeconfig := flag.Lookup(config.KubeconfigFlagName).Value.String()
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	cfg, err := courseConfig(kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	if err := run(cfg, *manifests, *crds, *namespace, *certDir, *host, *port, *failurePolicy, *keep, *del); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// courseConfig is the client configuration of kubeconfig when its current
// context is a cluster of this course: kwok-NAME (cluster/cluster.sh, the
// e2e harness) or kind-NAME, the rule harness/etcd and trace.AuditLog
// follow. The webhook configurations this tool writes send the API server
// to this machine, and with failurePolicy Fail refuse every Logger write
// while nothing answers there: on another cluster that is an outage. It
// never falls back to ~/.kube/config or the in-cluster configuration as
// controller-runtime's config.GetConfig does.
func courseConfig(kubeconfig string) (*rest.Config, error) {
	fix := "use the course cluster's: --kubeconfig=$(cluster/cluster.sh kubeconfig), as make lab-A3 does"
	if kubeconfig == "" {
		return nil, fmt.Errorf("no kubeconfig: neither --kubeconfig nor $KUBECONFIG is set; %s", fix)
	}
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(kc.CurrentContext, "kwok-") && !strings.HasPrefix(kc.CurrentContext, "kind-") {
		return nil, fmt.Errorf("kubeconfig %s points at context %q, neither a kwok cluster (kwok-NAME) nor a kind cluster (kind-NAME) of this course; %s", kubeconfig, kc.CurrentContext, fix)
	}
	return clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
}

func run(cfg *rest.Config, manifests, crds, namespace, certDir, host string, port int, failurePolicy string, keep, del bool) error {
	if del {
		return deleteConfigurations(cfg)
	}
	fp := admissionregistrationv1.FailurePolicyType(failurePolicy)
	if fp != admissionregistrationv1.Fail && fp != admissionregistrationv1.Ignore {
		return fmt.Errorf("--failure-policy=%s: want Fail or Ignore", failurePolicy)
	}
	start := time.Now()
	opts := &envtest.WebhookInstallOptions{Paths: []string{manifests}, LocalServingHost: host, LocalServingPort: port}
	// A new CA and a serving certificate for localhost and host, in a
	// temporary folder; clientConfig rewritten to a URL, with the CA
	// bundle.
	if err := opts.PrepWithoutInstalling(); err != nil {
		return err
	}
	defer func() { _ = opts.Cleanup() }()
	bundle := opts.LocalServingCAData
	if keep {
		// envtest's CA bundle is the serving certificate itself: a client
		// that trusts it accepts exactly that certificate.
		kept, err := os.ReadFile(filepath.Join(certDir, "tls.crt"))
		if err != nil {
			return fmt.Errorf("--keep-cert: %w", err)
		}
		bundle = kept
	} else if err := writeCert(opts.LocalServingCertDir, certDir); err != nil {
		return err
	}
	certs := time.Since(start)
	var selector *metav1.LabelSelector
	if namespace != "" {
		selector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: namespace}}
	}
	for _, m := range opts.MutatingWebhooks {
		m.Name = mutatingName
		for i := range m.Webhooks {
			if err := setup(&m.Webhooks[i].ClientConfig); err != nil {
				return err
			}
			m.Webhooks[i].NamespaceSelector, m.Webhooks[i].FailurePolicy = selector, &fp
			m.Webhooks[i].ClientConfig.CABundle = bundle
		}
	}
	for _, v := range opts.ValidatingWebhooks {
		v.Name = validatingName
		for i := range v.Webhooks {
			if err := setup(&v.Webhooks[i].ClientConfig); err != nil {
				return err
			}
			v.Webhooks[i].NamespaceSelector, v.Webhooks[i].FailurePolicy = selector, &fp
			v.Webhooks[i].ClientConfig.CABundle = bundle
		}
	}
	// The CRDs, created or updated, and served, before the admission
	// configurations: envtest gives every CRD whose kind has a hub and
	// spokes in the scheme (Logger: v2's Hub, v1's ConvertTo and
	// ConvertFrom) the conversion webhook at https://<host>:<port>/convert
	// with the CA bundle, in place of config/crd-patches/conversion.yaml's
	// placeholder Service.
	scheme := runtime.NewScheme()
	utilruntime.Must(examplev1.AddToScheme(scheme))
	utilruntime.Must(examplev2.AddToScheme(scheme))
	withBundle := *opts
	withBundle.LocalServingCAData = bundle
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{crds}, Scheme: scheme, WebhookOptions: withBundle, ErrorIfPathMissing: true}); err != nil {
		return err
	}
	// Creates the configurations, or updates them, and waits until the API
	// server has them.
	if err := opts.Install(cfg); err != nil {
		return err
	}
	abs, _ := filepath.Abs(certDir)
	scope := "every namespace"
	if namespace != "" {
		scope = "namespace " + namespace
	}
	fmt.Printf(">> CRDs from %s; Loggers' v1 and v2 converted at https://%s:%d/convert\n", crds, host, port)
	fmt.Printf(">> webhook configurations %s and %s for Loggers in %s, failurePolicy %s\n", mutatingName, validatingName, scope, fp)
	if keep {
		fmt.Printf(">> the serving certificate in %s kept; it is the CA bundle of the configurations\n", abs)
	} else {
		fmt.Printf(">> a new CA and serving certificate in %s (%s); the CA bundle is in the configurations\n", abs, certs.Round(time.Millisecond))
	}
	fmt.Printf(">> run the operator with: --webhook-bind-address=%s:%d --webhook-cert-dir=%s\n", host, port, abs)
	return nil
}

// writeCert copies tls.key, then tls.crt, from envtest's folder to dir. The
// key first: the operator's certwatcher re-reads the pair on each change,
// and keeps the old one until the two match.
func writeCert(from, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range []string{"tls.key", "tls.crt"} {
		b, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// setup takes the double slash out of envtest's URL (it joins host:port
// and the service's path, which starts with one, with another).
func setup(cc *admissionregistrationv1.WebhookClientConfig) error {
	if cc.URL == nil {
		return fmt.Errorf("the configuration has no service path to call")
	}
	u, err := url.Parse(*cc.URL)
	if err != nil {
		return err
	}
	u.Path = "/" + strings.TrimLeft(u.Path, "/")
	cc.URL = ptr.To(u.String())
	return nil
}

// deleteConfigurations removes both configurations; gone already is fine.
func deleteConfigurations(cfg *rest.Config) error {
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	adm := c.AdmissionregistrationV1()
	if err := adm.MutatingWebhookConfigurations().Delete(ctx, mutatingName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err := adm.ValidatingWebhookConfigurations().Delete(ctx, validatingName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	fmt.Printf(">> deleted %s and %s\n", mutatingName, validatingName)
	return nil
}

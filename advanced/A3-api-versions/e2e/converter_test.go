package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	examplev1 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v1"
	examplev2 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v2"
	"github.com/operator-flow/operator-flow/harness"
)

// loggerCRD is the Logger CRD's name.
const loggerCRD = "loggers.example.com"

// loggerV2 is the v2 resource; loggerGVR (webhook_test.go) is v1's.
var loggerV2 = schema.GroupVersionResource{Group: "example.com", Version: "v2", Resource: "loggers"}

// scheme knows both Logger versions: a converter decodes either.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(examplev1.AddToScheme(s))
	utilruntime.Must(examplev2.AddToScheme(s))
	return s
}()

// The package's converter: controller-runtime's conversion handler with this
// module's types, in the test binary, for tests whose operators run without
// a webhook server. Tests of the operator's own conversion point the CRD at
// their operator for a while (useConverter).
var (
	packageConverter *envtest.WebhookInstallOptions
	stopConverter    func()
)

// startConverter serves the conversion, then installs the module's CRDs,
// the Logger's converting there.
func startConverter(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	host := "127.0.0.1"
	if os.Getenv("CLUSTER") == "kind" {
		var err error
		if host, err = kindGatewayAddr(); err != nil {
			return ctx, err
		}
	}
	opts := &envtest.WebhookInstallOptions{LocalServingHost: host}
	// A CA, a serving certificate for the host, and a free port.
	if err := opts.PrepWithoutInstalling(); err != nil {
		return ctx, fmt.Errorf("the converter's certificate: %w", err)
	}
	srv := ctrlwebhook.NewServer(ctrlwebhook.Options{Host: host, Port: opts.LocalServingPort, CertDir: opts.LocalServingCertDir})
	srv.Register("/convert", conversion.NewWebhookHandler(scheme, conversion.NewRegistry()))
	serveCtx, cancel := context.WithCancel(context.Background())
	failed := make(chan error, 1)
	go func() { failed <- srv.Start(serveCtx) }()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-failed:
			return false, fmt.Errorf("the converter stopped: %w", err)
		default:
			return srv.StartedChecker()(nil) == nil, nil
		}
	})
	if err != nil {
		cancel()
		return ctx, err
	}
	// Stopping waits for the server to return before the certificate's
	// folder goes.
	packageConverter = opts
	stopConverter = func() {
		cancel()
		if err := <-failed; err != nil {
			fmt.Fprintln(os.Stderr, "the converter stopped with:", err)
		}
		_ = opts.Cleanup() // a temporary folder
	}
	return ctx, installCRDs(cfg.Client().RESTConfig(), opts)
}

// installCRDs installs the module's CRDs, as hack/install-webhook does: the
// Logger's conversion webhook is https://<host>:<port>/convert of opts, with
// its CA bundle (envtest's CRDInstallOptions).
func installCRDs(cfg *rest.Config, opts *envtest.WebhookInstallOptions) error {
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths:              []string{harness.RepoPath("advanced", "A3-api-versions", "config", "crd")},
		Scheme:             scheme,
		WebhookOptions:     *opts,
		ErrorIfPathMissing: true,
		MaxTime:            30 * time.Second,
	})
	return err
}

// useConverter points the Logger CRD's conversion at opts until t ends,
// then back at the package's converter.
func useConverter(t *testing.T, cfg *rest.Config, opts *envtest.WebhookInstallOptions) {
	t.Helper()
	if err := installCRDs(cfg, opts); err != nil {
		t.Fatalf("pointing the Logger CRD's conversion at %s:%d: %v", opts.LocalServingHost, opts.LocalServingPort, err)
	}
	t.Cleanup(func() {
		if err := installCRDs(cfg, packageConverter); err != nil {
			t.Errorf("pointing the Logger CRD's conversion back at the package's converter: %v", err)
		}
	})
}

// removeLoggerCRD deletes the Logger CRD, with every Logger, while the
// converter still answers (the API server lists what it deletes in the
// storage version), then stops the converter.
func removeLoggerCRD(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	defer func() {
		if stopConverter != nil {
			stopConverter()
		}
	}()
	crds, err := apiextensionsclient.NewForConfig(cfg.Client().RESTConfig())
	if err != nil {
		return ctx, err
	}
	return ctx, deleteCRD(ctx, crds, loggerCRD)
}

// deleteCRD deletes a CRD and waits until it is gone.
func deleteCRD(ctx context.Context, crds apiextensionsclient.Interface, name string) error {
	err := crds.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// loggerCRDNow reads the Logger CRD.
func loggerCRDNow(t *testing.T, crds apiextensionsclient.Interface) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), loggerCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return crd
}

// kubectl runs ./bin/kubectl on the test cluster and returns its standard
// output and standard error. Its discovery cache is the test's own: kubectl
// keeps what discovery said for hours, per server address, and a cache that
// lists Logger v2 would send a later `kubectl get loggers` on the same
// cluster to v2 once this package has deleted the CRD.
func kubectl(t *testing.T, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(harness.RepoPath("bin", "kubectl"), append([]string{"--kubeconfig", kubeconfig, "--cache-dir", t.TempDir()}, args...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// runtimeFromUnstructured decodes an object the dynamic client read into a
// Go type.
func runtimeFromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

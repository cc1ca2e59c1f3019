// Command admission-webhook is module A2 of operator-flow: stage 06, whose
// operator also serves an admission webhook for Loggers (internal/webhook):
// a namespace's replicas cap and team label, the rule of harness/admission.
// The rest is stage 06 unchanged: status in the /status subresource with
// conditions and observedGeneration, Deployments owned by their Logger, a
// finalizer for the seats a ticket holds outside its namespace, and Events;
// see README.md.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	examplev1 "github.com/operator-flow/operator-flow/advanced/A2-admission-webhook/api/example/v1"
	flightsv1 "github.com/operator-flow/operator-flow/advanced/A2-admission-webhook/api/flights/v1"
	"github.com/operator-flow/operator-flow/advanced/A2-admission-webhook/internal/controller"
	"github.com/operator-flow/operator-flow/advanced/A2-admission-webhook/internal/webhook"
	"github.com/operator-flow/operator-flow/apicount"
)

// stageName names this operator in its User-Agent and its first log line.
const stageName = "A2-admission-webhook"

// defaultResync: how often the informers hand every cached object to the
// handlers again, as an update with nothing changed. It costs no request,
// only a pass over the cache. In stage 03 it was the only retry there was,
// so it came every minute. Here the queue retries failed keys itself, and
// the resync is only a safety net, for a change that no event reported:
// every ten minutes is plenty.
const defaultResync = 10 * time.Minute

// defaultWorkers: goroutines per queue, as many as sample-controller runs.
// Two keep one slow request from holding up a whole kind.
const defaultWorkers = 2

// Leader election: replicas compete for the Lease leaderElectionID, and the
// holder records an Event on it. A Role in the namespace config/default
// deploys into, not the ClusterRole: rights to every Lease would include
// kube-controller-manager's.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=operator-flow-system,roleName=operator-flow-a2-leader-election
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=operator-flow-system,roleName=operator-flow-a2-leader-election

const leaderElectionID = "operator-flow-a2"

// eventSource names the operator in the Events it records (the From column
// of `kubectl describe`).
const eventSource = "operator-flow-a2"

// /metrics asks the API server who a caller is (TokenReview) and whether
// they may GET /metrics (SubjectAccessReview) before it answers.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

func main() {
	// --kubeconfig is registered by controller-runtime (ctrl.GetConfig reads it).
	namespace := flag.String("namespace", "", "watch only this namespace (default: all namespaces)")
	image := flag.String("logger-image", "busybox:1.37", "container image of the Loggers' pods")
	ledgerNS := flag.String("ledger-namespace", "", "namespace of the seat ledger (default: --namespace, else default)")
	resync := flag.Duration("resync", defaultResync, "how often every cached object is handed to the handlers again (0: never)")
	workers := flag.Int("workers", defaultWorkers, "workers per queue (FlightTickets, Loggers): keys synced at the same time")
	metricsAddr := flag.String("metrics-bind-address", ":8443", `address of the HTTPS /metrics endpoint ("0" turns it off)`)
	probeAddr := flag.String("health-probe-bind-address", ":8081", `address of /healthz and /readyz ("0" turns them off)`)
	leaderElect := flag.Bool("leader-elect", false, "run as one of several replicas: only the holder of a Lease reconciles")
	leaderElectNamespace := flag.String("leader-elect-namespace", "", "namespace of the Lease (default: --namespace, else the pod's own namespace in-cluster)")
	leaseDuration := flag.Duration("leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the last renewal before it takes the Lease over")
	renewDeadline := flag.Duration("leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leading (and exits)")
	retryPeriod := flag.Duration("leader-elect-retry-period", 2*time.Second, "how often replicas try to take or renew the Lease")
	// The webhook server: HTTPS, with the certificate and key in
	// --webhook-cert-dir (tls.crt, tls.key), re-read when they change. On
	// loopback by default, as every endpoint of the labs: the kwok
	// cluster's API server runs on this machine. A kind cluster's runs in a
	// container, and reaches the Docker network's gateway address instead
	// (this machine's, with Docker Engine on Linux).
	webhookAddr := flag.String("webhook-bind-address", "127.0.0.1:9443", `address of the admission webhook server ("0" turns it off)`)
	webhookCertDir := flag.String("webhook-cert-dir", "", "folder of the webhook server's tls.crt and tls.key (default: <temp>/k8s-webhook-server/serving-certs)")
	// Console output with readable timestamps (--zap-devel=false: JSON).
	// Stack traces only on panics: a failed reconcile is expected here, and
	// its error already says what and where.
	logOpts := zap.Options{Development: true, StacktraceLevel: zapcore.DPanicLevel}
	logOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))
	log := ctrl.Log.WithName("setup")
	fatal := func(err error, msg string) {
		log.Error(err, msg)
		os.Exit(1)
	}
	if *workers < 1 {
		fatal(fmt.Errorf("--workers=%d: there must be at least one worker per queue", *workers), "bad flag")
	}
	webhookOpts, err := webhookServerOptions(*webhookAddr, *webhookCertDir)
	if err != nil {
		fatal(err, "bad flag")
	}

	// 04's restConfig, with one difference: ctrl.GetConfig turns client-go's
	// own rate limit off (QPS -1, where 02 to 04 set 300 a second) and
	// leaves the pace to the API server's Priority and Fairness.
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fatal(err, "no Kubernetes configuration")
	}
	cfg.UserAgent = "operator-flow/" + stageName
	// Count every request the clients below send, to print at exit.
	counter := apicount.New()
	counter.Wrap(cfg)

	// The scheme maps Go types to API kinds, the built-in ones and ours:
	// 04's generated clientset knew its types, the Manager's client learns them.
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(flightsv1.AddToScheme(scheme))
	utilruntime.Must(examplev1.AddToScheme(scheme))
	ledger := &controller.SeatLedger{Namespace: ledgerNamespace(*ledgerNS, *namespace)}
	opts := ctrl.Options{
		Scheme: scheme,
		// HTTPS (self-signed), only for callers the API server authenticates
		// and allows to GET /metrics, and HTTP/1.1 only, as kubebuilder
		// scaffolds it: controller-runtime offers HTTP/2 unless told not to,
		// and a scraper needs nothing HTTP/2 adds.
		Metrics: metricsserver.Options{
			BindAddress: *metricsAddr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization,
			TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
		},
		HealthProbeBindAddress: *probeAddr,
		// HTTP/1.1 only, as for /metrics (controller-runtime offers HTTP/2
		// unless told not to): the API server's calls need nothing HTTP/2
		// adds (webhookServerOptions).
		WebhookServer: ctrlwebhook.NewServer(webhookOpts),

		LeaderElection:          *leaderElect,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: *leaderElectNamespace,
		LeaseDuration:           leaseDuration,
		RenewDeadline:           renewDeadline,
		RetryPeriod:             retryPeriod,
		// Give the Lease up on a clean exit, so that a standby takes over at
		// once; safe because the process ends right after Start returns.
		LeaderElectionReleaseOnCancel: true,

		// Only the Deployments this operator made, as 04's informer.
		Cache: cache.Options{ByObject: controller.CacheByObject(ledger.Namespace), SyncPeriod: resync},
	}
	if *namespace != "" {
		// The cache lists and watches only this namespace, for every kind,
		// so the operator can run with a RoleBinding in one namespace.
		opts.Cache.DefaultNamespaces = map[string]cache.Config{*namespace: {}}
		if opts.LeaderElectionNamespace == "" {
			opts.LeaderElectionNamespace = *namespace
		}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		fatal(err, "creating the manager")
	}
	// /healthz and /readyz answer while the process runs, as kubebuilder
	// scaffolds them.
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		fatal(err, "adding /healthz")
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		fatal(err, "adding /readyz")
	}
	// Events go through the events.k8s.io API; `kubectl describe` shows
	// them, with eventSource in the From column.
	events := mgr.GetEventRecorder(eventSource)
	ledger.Client, ledger.Reader = mgr.GetClient(), mgr.GetAPIReader()
	if err := (&controller.FlightTicketReconciler{Client: mgr.GetClient(), Ledger: ledger, Recorder: events, Namespace: *namespace}).SetupWithManager(mgr, *workers); err != nil {
		fatal(err, "setting up the FlightTicket controller")
	}
	if err := (&controller.LoggerReconciler{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Image: *image, Recorder: events}).SetupWithManager(mgr, *workers); err != nil {
		fatal(err, "setting up the Logger controller")
	}
	// The webhooks read namespaces through the Manager's cache, and from
	// the API server when the cache has not seen one yet.
	if *webhookAddr != "0" {
		if err := (&webhook.LoggerWebhook{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr); err != nil {
			fatal(err, "setting up the Logger webhooks")
		}
	}

	// SIGINT (Ctrl-C) or SIGTERM (kubectl delete pod, systemd) cancels ctx,
	// and Start returns once the Manager has stopped the controllers (their
	// workers finish the keys in their hands), released the Lease and
	// closed the endpoints. A second signal exits at once. "shutting down"
	// is logged before Start returns, so it always comes before the request
	// summary.
	ctx := ctrl.SetupSignalHandler()
	log.Info("starting", "stage", stageName, "namespace", *namespace, "ledger-namespace", ledger.Namespace, "logger-image", *image, "resync", *resync, "workers", *workers, "leader-elect", *leaderElect, "webhook-bind-address", *webhookAddr)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		err = <-done
	case err = <-done:
	}
	if err != nil {
		counter.WriteSummary(os.Stderr)
		fatal(err, "operator failed")
	}
	log.Info("stopped")
	counter.WriteSummary(os.Stderr)
}

// ledgerNamespace is where the seat holds live: --ledger-namespace (in a
// cluster, config/manager sets the pod's own), else the one namespace the
// operator watches, else "default".
func ledgerNamespace(flagValue, namespace string) string {
	if flagValue != "" {
		return flagValue
	}
	if namespace != "" {
		return namespace
	}
	return "default"
}

// webhookServerOptions turns --webhook-bind-address and --webhook-cert-dir
// into the webhook server's options; "0" turns the server off (port -1).
func webhookServerOptions(addr, certDir string) (ctrlwebhook.Options, error) {
	opts := ctrlwebhook.Options{
		CertDir: certDir,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	}
	if addr == "0" {
		opts.Port = -1
		return opts, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return opts, fmt.Errorf("--webhook-bind-address=%s: %w", addr, err)
	}
	if opts.Port, err = strconv.Atoi(port); err != nil || opts.Port < 1 || opts.Port > 65535 {
		return opts, fmt.Errorf("--webhook-bind-address=%s: the port must be a number from 1 to 65535", addr)
	}
	opts.Host = host
	return opts, nil
}

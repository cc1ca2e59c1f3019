// Command 06-status-and-owners is the operator as the Kubernetes API means
// operators to be written: status in the /status subresource with
// conditions and observedGeneration, Deployments owned by their Logger and
// deleted by the garbage collector, a finalizer for the seats a ticket holds
// outside its namespace, and Events. The machinery is stage 05's: a Manager
// and one Reconciler per kind (internal/controller); see README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	examplev1 "github.com/operator-flow/operator-flow/06-status-and-owners/api/example/v1"
	flightsv1 "github.com/operator-flow/operator-flow/06-status-and-owners/api/flights/v1"
	"github.com/operator-flow/operator-flow/06-status-and-owners/internal/controller"
	"github.com/operator-flow/operator-flow/apicount"
)

// leaderElectionID names the Lease the replicas compete for. Every replica of
// this stage must use the same name, and no other program the same one.
const leaderElectionID = "operator-flow-stage-06"

// eventSource names the operator in the Events it records (the From column
// of `kubectl describe`).
const eventSource = "operator-flow-06"

// Leader election takes and renews a Lease in the leader election namespace,
// and the lock records a "became leader" Event on it. Both are namespaced
// permissions (a Role, not the ClusterRole): an operator that could write
// Leases everywhere could take over kube-controller-manager's leader lock.
// The namespace is the one config/default deploys into.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=operator-flow-system,roleName=operator-flow-06-leader-election
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=operator-flow-system,roleName=operator-flow-06-leader-election

// The metrics endpoint asks the API server who a caller is (a TokenReview)
// and whether they may GET /metrics (a SubjectAccessReview) before it
// answers; see metricsOptions.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// options are the command-line flags.
type options struct {
	namespace       string
	ledgerNamespace string
	loggerImage     string
	workers         int

	metricsAddr   string
	metricsSecure bool
	probeAddr     string

	leaderElect          bool
	leaderElectNamespace string
	leaseDuration        time.Duration
	renewDeadline        time.Duration
	retryPeriod          time.Duration

	zap zap.Options
}

func main() {
	o := parseFlags()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	if err := run(o); err != nil {
		ctrl.Log.WithName("setup").Error(err, "operator failed")
		os.Exit(1)
	}
}

func parseFlags() options {
	var o options
	// --kubeconfig is registered by controller-runtime (ctrl.GetConfig reads it).
	flag.StringVar(&o.namespace, "namespace", "", "watch only this namespace (all namespaces when empty)")
	flag.StringVar(&o.ledgerNamespace, "ledger-namespace", "", "namespace of the seat ledger (default: the operator's own namespace in a cluster, else --namespace, else default)")
	flag.StringVar(&o.loggerImage, "logger-image", "busybox:1.37", "image of the container every Logger's Deployment runs")
	flag.IntVar(&o.workers, "workers", 2, "reconciles of one kind that run at the same time (MaxConcurrentReconciles)")
	flag.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", `address of the Prometheus /metrics endpoint ("0" turns it off)`)
	flag.BoolVar(&o.metricsSecure, "metrics-secure", true, "serve /metrics over HTTPS, only to callers the API server authenticates and allows to GET /metrics (false: plain HTTP to anyone, for local experiments only)")
	flag.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz ("0" turns them off)`)
	flag.BoolVar(&o.leaderElect, "leader-elect", false, "run as one of several replicas: only the holder of a Lease reconciles")
	flag.StringVar(&o.leaderElectNamespace, "leader-elect-namespace", "", "namespace of the Lease (default: --namespace, else the pod's own namespace in-cluster)")
	flag.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the last renewal before it takes the Lease over")
	flag.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leading (and exits)")
	flag.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "how often replicas try to take or renew the Lease")
	// Console output with readable timestamps; --zap-devel=false switches to
	// JSON. Stack traces only on panics: a failed reconcile is an expected
	// event here, and its error already says what and where.
	o.zap = zap.Options{Development: true, StacktraceLevel: zapcore.DPanicLevel}
	o.zap.BindFlags(flag.CommandLine)
	flag.Parse()
	return o
}

func run(o options) error {
	log := ctrl.Log.WithName("setup")

	// The scheme maps Go types to API kinds: the built-in ones (Deployment)
	// and ours.
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, flightsv1.AddToScheme, examplev1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}

	// --kubeconfig, else $KUBECONFIG, else the in-cluster config, else
	// ~/.kube/config. ctrl.GetConfig turns client-go's own rate limit off
	// (QPS -1, where 02 to 04 set 300 a second) and leaves the pace to the
	// API server's Priority and Fairness. Count every request any client
	// built from it makes: the cache's, the writes', leader election's.
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("no Kubernetes configuration: %w", err)
	}
	counter := apicount.New()
	counter.Wrap(cfg)
	defer counter.WriteSummary(os.Stderr)

	mgr, err := ctrl.NewManager(cfg, managerOptions(o, scheme))
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	// /healthz: the process answers. /readyz: the caches have synced, so
	// the controllers read a complete picture of the cluster.
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("caches", cachesSynced(mgr)); err != nil {
		return err
	}

	// Events go through the events.k8s.io API; `kubectl describe` shows
	// them, with this name in the From column.
	events := mgr.GetEventRecorder(eventSource)
	ledger := &controller.SeatLedger{Client: mgr.GetClient(), Namespace: ledgerNamespace(o)}
	if err := (&controller.FlightTicketReconciler{Client: mgr.GetClient(), Ledger: ledger, Recorder: events}).SetupWithManager(mgr, o.workers); err != nil {
		return fmt.Errorf("setting up the FlightTicket controller: %w", err)
	}
	if err := (&controller.LoggerReconciler{Client: mgr.GetClient(), Image: o.loggerImage, Recorder: events}).SetupWithManager(mgr, o.workers); err != nil {
		return fmt.Errorf("setting up the Logger controller: %w", err)
	}

	// Start blocks until the context ends (SIGINT or SIGTERM; a second signal
	// exits at once) and the Manager has stopped the controllers, released
	// the Lease and closed the endpoints.
	ctx := ctrl.SetupSignalHandler()
	log.Info("starting", "namespace", displayNamespace(o.namespace), "ledgerNamespace", ledger.Namespace, "workers", o.workers, "leaderElection", o.leaderElect)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		err = <-done
	case err = <-done:
	}
	if err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// cachesSynced is a readiness check that passes once every informer the
// controllers asked for has listed its kind. A standby replica (leader
// election) has started no informers yet, so it is ready too: it can take
// over at any moment.
func cachesSynced(mgr ctrl.Manager) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informer caches have not synced yet")
		}
		return nil
	}
}

// managerOptions turns the flags into the Manager's configuration.
func managerOptions(o options, scheme *runtime.Scheme) ctrl.Options {
	opts := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsOptions(o),
		HealthProbeBindAddress: o.probeAddr,

		LeaderElection:          o.leaderElect,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: o.leaderElectNamespace,
		LeaseDuration:           &o.leaseDuration,
		RenewDeadline:           &o.renewDeadline,
		RetryPeriod:             &o.retryPeriod,
		// Give the Lease up on a clean exit, so that a standby takes over at
		// once instead of after the lease duration. Safe because the process
		// ends right after Start returns.
		LeaderElectionReleaseOnCancel: true,

		// Only the Deployments this operator made, as 04's informer.
		Cache: cache.Options{ByObject: controller.CacheByObject()},
	}
	if o.namespace != "" {
		// The cache lists and watches only this namespace, for every kind.
		// That is what lets the operator run with a RoleBinding in one
		// namespace instead of cluster-wide rights.
		opts.Cache.DefaultNamespaces = map[string]cache.Config{o.namespace: {}}
		if opts.LeaderElectionNamespace == "" {
			opts.LeaderElectionNamespace = o.namespace
		}
	}
	return opts
}

// metricsOptions configures the /metrics endpoint. Metrics say a lot about a
// cluster (object names in labels, request rates), so by default the
// endpoint is HTTPS and every request is checked with the API server: the
// bearer token must authenticate (TokenReview), and its user must be allowed
// to GET the non-resource URL /metrics (SubjectAccessReview), which
// config/rbac/metrics_reader_role.yaml grants. controller-runtime's filter
// does both checks, as in every kubebuilder project; it links in part of
// k8s.io/apiserver, which makes the binary larger. Without a certificate in
// CertDir the server makes a self-signed one at start, as
// kube-controller-manager does for its own metrics.
func metricsOptions(o options) metricsserver.Options {
	if !o.metricsSecure {
		return metricsserver.Options{BindAddress: o.metricsAddr}
	}
	return metricsserver.Options{
		BindAddress:    o.metricsAddr,
		SecureServing:  true,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
	}
}

// ledgerNamespace is where the seat holds live: --ledger-namespace, else the
// namespace the operator runs in (a pod's service account says which), else
// the one namespace it watches, else "default".
func ledgerNamespace(o options) string {
	if o.ledgerNamespace != "" {
		return o.ledgerNamespace
	}
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil && len(b) > 0 {
		return string(b)
	}
	if o.namespace != "" {
		return o.namespace
	}
	return "default"
}

// serviceAccountNamespace is the file the kubelet mounts into every pod that
// names the pod's namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func displayNamespace(ns string) string {
	if ns == "" {
		return "(all)"
	}
	return ns
}

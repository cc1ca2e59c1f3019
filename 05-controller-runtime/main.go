// Command controller-runtime is stage 05 of operator-flow: the operator of
// stage 04 on controller-runtime, laid out as kubebuilder lays out a
// project.
//
// Everything stage 04 wrote by hand (informers, listers, workqueue, workers,
// retries, cache sync, shutdown) happens inside a Manager now, which also
// serves the metrics and health endpoints and runs leader election. What is
// left to write is one Reconciler per kind (internal/controller); README.md
// says where each piece of 04 went.
package main

import (
	"context"
	"errors"
	"flag"
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

	examplev1 "github.com/operator-flow/operator-flow/05-controller-runtime/api/example/v1"
	flightsv1 "github.com/operator-flow/operator-flow/05-controller-runtime/api/flights/v1"
	"github.com/operator-flow/operator-flow/05-controller-runtime/internal/controller"
	"github.com/operator-flow/operator-flow/apicount"
)

// stageName names this operator in its User-Agent.
const stageName = "05-controller-runtime"

// defaultWorkers: reconciles of one kind at the same time, as 04's workers
// per queue.
const defaultWorkers = 2

// leaderElectionID names the Lease the replicas compete for. Every replica of
// this stage must use the same name, and no other program the same one.
const leaderElectionID = "operator-flow-stage-05"

// Leader election takes and renews a Lease in the leader election namespace,
// and the lock records a "became leader" Event on it. Both are namespaced
// permissions (a Role, not the ClusterRole): an operator that could write
// Leases everywhere could take over kube-controller-manager's leader lock.
// The namespace is the one config/default deploys into.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=operator-flow-system,roleName=operator-flow-05-leader-election
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=operator-flow-system,roleName=operator-flow-05-leader-election

// The metrics endpoint asks the API server who a caller is (a TokenReview)
// and whether they may GET /metrics (a SubjectAccessReview) before it
// answers; see metricsOptions.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

func main() {
	// --kubeconfig is registered by controller-runtime (ctrl.GetConfig reads it).
	namespace := flag.String("namespace", "", "watch only this namespace (default: all namespaces)")
	image := flag.String("logger-image", "busybox:1.37", "container image of the Loggers' pods")
	workers := flag.Int("workers", defaultWorkers, "reconciles of one kind that run at the same time (MaxConcurrentReconciles)")
	metricsAddr := flag.String("metrics-bind-address", ":8443", `address of the Prometheus /metrics endpoint ("0" turns it off)`)
	metricsSecure := flag.Bool("metrics-secure", true, "serve /metrics over HTTPS, only to callers the API server authenticates and allows to GET /metrics (false: plain HTTP to anyone, for local experiments only)")
	probeAddr := flag.String("health-probe-bind-address", ":8081", `address of /healthz and /readyz ("0" turns them off)`)
	leaderElect := flag.Bool("leader-elect", false, "run as one of several replicas: only the holder of a Lease reconciles")
	leaderElectNamespace := flag.String("leader-elect-namespace", "", "namespace of the Lease (default: --namespace, else the pod's own namespace in-cluster)")
	leaseDuration := flag.Duration("leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the last renewal before it takes the Lease over")
	renewDeadline := flag.Duration("leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it gives up leading (and exits)")
	retryPeriod := flag.Duration("leader-elect-retry-period", 2*time.Second, "how often replicas try to take or renew the Lease")
	// Console output with readable timestamps; --zap-devel=false switches to
	// JSON. Stack traces only on panics: a failed reconcile is an expected
	// event here, and its error already says what and where.
	logOpts := zap.Options{Development: true, StacktraceLevel: zapcore.DPanicLevel}
	logOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))
	log := ctrl.Log.WithName("setup")
	fatal := func(err error, msg string) {
		log.Error(err, msg)
		os.Exit(1)
	}

	// --kubeconfig, else $KUBECONFIG, else the in-cluster config, else
	// ~/.kube/config. ctrl.GetConfig turns client-go's own rate limit off
	// (QPS -1, where 02 to 04 set 300 a second) and leaves the pace to the
	// API server's Priority and Fairness.
	cfg, err := ctrl.GetConfig()
	if err != nil {
		fatal(err, "no Kubernetes configuration")
	}
	cfg.UserAgent = "operator-flow/" + stageName
	// Count every request any client built from cfg makes, to print at exit:
	// the cache's, the writes', leader election's.
	counter := apicount.New()
	counter.Wrap(cfg)

	// The scheme maps Go types to API kinds: the built-in ones (Deployment)
	// and ours. 04's generated clientset knew its types; the Manager's one
	// client learns them here.
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, flightsv1.AddToScheme, examplev1.AddToScheme} {
		if err := add(scheme); err != nil {
			fatal(err, "building the scheme")
		}
	}
	opts := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsOptions(*metricsAddr, *metricsSecure),
		HealthProbeBindAddress: *probeAddr,

		LeaderElection:          *leaderElect,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: *leaderElectNamespace,
		LeaseDuration:           leaseDuration,
		RenewDeadline:           renewDeadline,
		RetryPeriod:             retryPeriod,
		// Give the Lease up on a clean exit, so that a standby takes over at
		// once instead of after the lease duration. Safe because the process
		// ends right after Start returns.
		LeaderElectionReleaseOnCancel: true,

		// Only the Deployments this operator made, as 04's informer.
		Cache: cache.Options{ByObject: controller.CacheByObject()},
	}
	if *namespace != "" {
		// The cache lists and watches only this namespace, for every kind.
		// That is what lets the operator run with a RoleBinding in one
		// namespace instead of cluster-wide rights.
		opts.Cache.DefaultNamespaces = map[string]cache.Config{*namespace: {}}
		if opts.LeaderElectionNamespace == "" {
			opts.LeaderElectionNamespace = *namespace
		}
	}
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		fatal(err, "creating the manager")
	}
	// /healthz: the process answers. /readyz: the caches have synced, so
	// the controllers read a complete picture of the cluster.
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		fatal(err, "adding /healthz")
	}
	if err := mgr.AddReadyzCheck("caches", cachesSynced(mgr)); err != nil {
		fatal(err, "adding /readyz")
	}

	if err := (&controller.FlightTicketReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr, *workers); err != nil {
		fatal(err, "setting up the FlightTicket controller")
	}
	if err := (&controller.LoggerReconciler{Client: mgr.GetClient(), Image: *image}).SetupWithManager(mgr, *workers); err != nil {
		fatal(err, "setting up the Logger controller")
	}

	// SIGINT (Ctrl-C) or SIGTERM (kubectl delete pod, systemd) cancels ctx,
	// and Start returns once the Manager has stopped the controllers (their
	// workers finish the keys in their hands), released the Lease and
	// closed the endpoints. A second signal exits at once. "shutting down"
	// is logged before Start returns, so it always comes before the request
	// summary.
	ctx := ctrl.SetupSignalHandler()
	log.Info("starting", "namespace", *namespace, "logger-image", *image, "workers", *workers, "leader-elect", *leaderElect)
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
func metricsOptions(addr string, secure bool) metricsserver.Options {
	if !secure {
		return metricsserver.Options{BindAddress: addr}
	}
	return metricsserver.Options{
		BindAddress:    addr,
		SecureServing:  true,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
	}
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

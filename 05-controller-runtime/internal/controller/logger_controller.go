package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	examplev1 "github.com/operator-flow/operator-flow/05-controller-runtime/api/example/v1"
)

// The permissions of the Logger controller, for controller-gen. No "get":
// reads go to the cache, which lists and watches.
//
// +kubebuilder:rbac:groups=example.com,resources=loggers,verbs=list;watch;update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=list;watch;create;patch;delete

// LoggerReconciler is the Logger controller.
type LoggerReconciler struct {
	client.Client
	// Image is the logger container's image (the --logger-image flag).
	Image string
}

// SetupWithManager registers the controller: it reconciles a Logger when the
// Logger changes (For) and when one of its Deployments changes (Watches,
// with handleObject), workers at a time (04's --workers).
func (r *LoggerReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&examplev1.Logger{}).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(handleObject)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// CacheByObject tells the Manager's cache to hold only the Deployments this
// operator made (main.go passes it to cache.Options.ByObject), as 04's
// informer did with its label selector.
func CacheByObject() map[client.Object]cache.ByObject {
	selector, _ := labels.Parse(managedBySelector) // a constant that parses
	return map[client.Object]cache.ByObject{&appsv1.Deployment{}: {Label: selector}}
}

// Reconcile is the Logger controller's syncHandler. It makes the Logger's
// Deployment match the Logger, then sets the Logger's status.state from the
// Deployment; when the Logger is gone, it deletes the Deployment. Its key
// comes from the Logger's own events and from its Deployment's (drift), and
// it does the same whichever it was. controller-runtime's workers call it
// with the key, as 04's called syncLogger.
func (r *LoggerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx) // carries the Logger's namespace and name
	namespace, name := req.Namespace, req.Name

	var l examplev1.Logger // from the cache: a deep copy, ours to change
	if err := r.Get(ctx, req.NamespacedName, &l); apierrors.IsNotFound(err) {
		// The Logger is gone. The queue holds names, not events, so this is
		// what a delete looks like here. It also catches a Logger deleted
		// while the operator was down: at start-up the Deployment watch
		// lists its Deployment, handleObject queues the Logger, and here it
		// is, gone.
		return ctrl.Result{}, r.deleteDeployment(ctx, namespace, name)
	} else if err != nil {
		return ctrl.Result{}, err
	}
	if err := checkSpec(l.Spec); err != nil {
		return ctrl.Result{}, err
	}
	want := desiredDeployment(namespace, name, l.Spec, r.Image)
	wrote := true
	var d appsv1.Deployment
	err := r.Get(ctx, client.ObjectKeyFromObject(want), &d)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Create(ctx, want); apierrors.IsAlreadyExists(err) {
			// Not in the cache, yet there: one of two cases. It is ours,
			// made a moment ago, and its event has not arrived yet; that
			// event queues this Logger again. Or it is someone else's,
			// without the managed-by label: the cache never holds it, no
			// event follows, and we leave it alone, with the Logger's status
			// as it was.
			log.Info("Deployment exists but is not in the cache: ours, whose event will follow, or someone else's, which we leave alone", "deployment", want.Name)
			return ctrl.Result{}, nil
		} else if err != nil {
			// Returned, so the queue tries again with backoff (a quota, an
			// admission policy, the API server being away).
			return ctrl.Result{}, fmt.Errorf("creating Deployment %s: %w", want.Name, err)
		}
		log.Info("created deployment", "deployment", want.Name)
		d = *want
	case err != nil:
		return ctrl.Result{}, err
	case deploymentDrifted(&d, want):
		if err := r.Patch(ctx, &d, client.RawPatch(types.MergePatchType, repairPatch(want))); err != nil {
			return ctrl.Result{}, fmt.Errorf("updating Deployment %s: %w", want.Name, err)
		}
		log.Info("repaired deployment", "deployment", want.Name)
	default:
		wrote = false
	}
	changed, err := r.writeState(ctx, &l, loggerState(&d))
	if err == nil && !changed && !wrote {
		log.Info("in sync", "key", req.String())
	}
	return ctrl.Result{}, err
}

// checkSpec refuses a spec the operator cannot act on: an interval under a
// second makes a pod that prints without pause, and the API server refuses a
// Deployment with negative replicas every time. 01's CRD rejects both, but
// an object stored before its schema had these bounds can still carry them.
// Trying again would not change the spec, so the error is terminal (04's
// errPermanent): controller-runtime logs it and does not retry.
func checkSpec(s examplev1.LoggerSpec) error {
	if s.TimeInterval < 1 {
		return reconcile.TerminalError(fmt.Errorf("spec.timeInterval is %d, and must be at least 1", s.TimeInterval))
	}
	if r := ptr.Deref(s.Replicas, 1); r < 0 {
		return reconcile.TerminalError(fmt.Errorf("spec.replicas is %d, and must not be negative", r))
	}
	return nil
}

// writeState sets status.state, with an Update of the whole Logger (no
// status subresource yet), when it differs. It reports whether it wrote.
func (r *LoggerReconciler) writeState(ctx context.Context, l *examplev1.Logger, state string) (bool, error) {
	if l.Status.State == state {
		return false, nil
	}
	l.Status.State = state // l is a deep copy, ours to change
	if err := r.Update(ctx, l); err != nil {
		return false, fmt.Errorf("writing status: %w", err)
	}
	logf.FromContext(ctx).Info("status written", "state", state)
	return true, nil
}

// deleteDeployment removes the Deployment of a Logger that no longer exists,
// if there is one: the cache says, without a request. The cache holds only
// Deployments labelled managed-by this operator, so a Deployment of the same
// name that someone else made is never touched.
func (r *LoggerReconciler) deleteDeployment(ctx context.Context, namespace, logger string) error {
	var d appsv1.Deployment
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: deploymentName(logger)}, &d); err != nil {
		return client.IgnoreNotFound(err) // nothing left to clean up
	}
	// Background: the API server answers at once, and the garbage collector
	// then removes the Deployment's ReplicaSets and pods. The UID
	// precondition makes the API server refuse if the Deployment was
	// replaced by another of the same name since the cache saw it.
	err := r.Delete(ctx, &d, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &d.UID})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("deleting Deployment %s: %w", d.Name, err)
	}
	logf.FromContext(ctx).Info("deleted deployment of a deleted logger", "deployment", d.Name)
	return nil
}

// handleObject maps a Deployment event to the Logger it concerns: a
// Deployment scaled, edited or deleted behind our back is drift to repair,
// and one whose pods became available changes its Logger's state. Nothing
// but its labels links a Deployment to its Logger (owner references are
// stage 06's lesson). The cache holds only Deployments labelled
// managed-by this operator; app.kubernetes.io/instance names the Logger.
func handleObject(ctx context.Context, obj client.Object) []reconcile.Request {
	logger := obj.GetLabels()[instanceLabel]
	if logger == "" {
		logf.FromContext(ctx).Info("not the Deployment of a Logger", "deployment", client.ObjectKeyFromObject(obj), "missingLabel", instanceLabel)
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: logger}}}
}

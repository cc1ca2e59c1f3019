package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	examplev1 "github.com/operator-flow/operator-flow/06-status-and-owners/api/example/v1"
)

// The permissions of the Logger controller, for controller-gen. No "get":
// reads go to the cache, which lists and watches. No "delete" on
// Deployments any more: the garbage collector deletes them.
// loggers/finalizers: the Deployment's owner reference sets
// blockOwnerDeletion, and clusters that enable the
// OwnerReferencesPermissionEnforcement admission plugin (OpenShift does)
// allow that only to whoever may update the owner's finalizers.
//
// +kubebuilder:rbac:groups=example.com,resources=loggers,verbs=list;watch
// +kubebuilder:rbac:groups=example.com,resources=loggers/status,verbs=patch
// +kubebuilder:rbac:groups=example.com,resources=loggers/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// LoggerReconciler is the Logger controller.
type LoggerReconciler struct {
	client.Client
	// Image is the logger container's image (the --logger-image flag).
	Image    string
	Recorder recorder.EventRecorder
}

// SetupWithManager registers the controller: it reconciles a Logger when the
// Logger changes (For) and when a Deployment it controls changes (Owns),
// workers at a time (04's --workers). Owns replaces 05's handleObject: it
// maps a Deployment event to the Logger named in the Deployment's controller
// owner reference, not to the one its labels name. GenerationChangedPredicate
// drops the Logger's status-only updates, as for tickets
// (flightticket_controller.go says why); the Deployment, which the status
// depends on, has a watch of its own.
func (r *LoggerReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&examplev1.Logger{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
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
// Deployment match the Logger, then sets the Logger's conditions from the
// Deployment. Its key comes from the Logger's own events and from its
// Deployment's (drift), and it does the same whichever it was.
// controller-runtime's workers call it with the key, as 04's called
// syncLogger.
func (r *LoggerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx) // carries the Logger's namespace and name
	namespace, name := req.Namespace, req.Name

	// Step 1: read the Logger from the cache.
	var l examplev1.Logger // from the cache: a deep copy, ours to change
	if err := r.Get(ctx, req.NamespacedName, &l); err != nil {
		// NotFound: the Logger is gone. Its Deployment names it as owner,
		// so the garbage collector deletes the Deployment: nothing is left
		// to us, whether we ran when the Logger was deleted or not.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// Step 2: a Logger being deleted is left to the garbage collector.
	if !l.DeletionTimestamp.IsZero() {
		// With foreground deletion the Logger stays until the garbage
		// collector has deleted its Deployment; creating or repairing the
		// Deployment now would fight the garbage collector.
		log.Info("being deleted; the garbage collector removes its deployment")
		return ctrl.Result{}, nil
	}
	// Step 3: the Deployment the spec asks for, with the Logger as its
	// controller owner.
	if err := checkSpec(l.Spec); err != nil {
		return ctrl.Result{}, err
	}
	want := desiredDeployment(namespace, name, l.Spec, r.Image)
	if err := controllerutil.SetControllerReference(&l, want, r.Scheme()); err != nil {
		return ctrl.Result{}, err
	}
	// Step 4: create, adopt or repair the Deployment. The API server's
	// refusal to create, adopt or repair the Deployment is a failure: a Warning Event, the Degraded condition, and the error
	// returned at the end, so that controller-runtime retries with backoff.
	wrote := true
	var failure *deploymentFailure
	var d appsv1.Deployment
	err := r.Get(ctx, client.ObjectKeyFromObject(want), &d)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Create(ctx, want); apierrors.IsAlreadyExists(err) {
			// The cache holds every Deployment labelled managed-by this
			// operator, so one it lacks is someone else's: never take it
			// over; say so, and try again later in case it goes away.
			// (It can also be ours, created a moment ago, whose event has
			// not reached the cache yet; that event reconciles the Logger
			// again at once, and the condition clears.)
			failure = &deploymentFailure{examplev1.ReasonNotOwned, fmt.Errorf("a Deployment named %s exists and is not labelled %s; not touching it", want.Name, managedBySelector)}
		} else if err != nil {
			// A quota, an admission policy, the API server being away.
			failure = &deploymentFailure{examplev1.ReasonCreateFailed, fmt.Errorf("creating Deployment %s: %w", want.Name, err)}
		} else {
			r.Recorder.Eventf(&l, want, corev1.EventTypeNormal, EventReasonCreated, "Create", "Created deployment %s", want.Name)
			log.Info("created deployment", "deployment", want.Name)
			d = *want
		}
	case err != nil:
		return ctrl.Result{}, err
	case !metav1.IsControlledBy(&d, &l):
		if failure, err = r.adopt(ctx, &l, &d); err != nil {
			return ctrl.Result{}, err
		}
	case deploymentDrifted(&d, want):
		if err := r.Patch(ctx, &d, client.RawPatch(types.MergePatchType, repairPatch(want))); err != nil {
			failure = &deploymentFailure{examplev1.ReasonUpdateFailed, fmt.Errorf("updating Deployment %s: %w", want.Name, err)}
		} else {
			r.Recorder.Eventf(&l, &d, corev1.EventTypeNormal, EventReasonUpdated, "Update", "Deployment %s repaired", d.Name)
			log.Info("repaired deployment", "deployment", want.Name)
		}
	default:
		wrote = false
	}
	// Step 5: report what happened: a Warning Event for a failure, and the
	// status (conditions and observedGeneration) from the Deployment seen.
	if failure != nil {
		r.Recorder.Eventf(&l, nil, corev1.EventTypeWarning, EventReasonFailed, "Reconcile", "%v", failure)
	}
	have := &d // the Deployment the Logger controls: none created, or someone else's, is nil
	if !metav1.IsControlledBy(&d, &l) {
		have = nil
	}
	changed, err := r.writeStatus(ctx, &l, loggerStatus(&l, have, failure))
	if err == nil && !changed && !wrote {
		log.Info("in sync", "key", req.String())
	}
	if err == nil && failure != nil {
		// Returned after the status write, so that the Degraded condition
		// is visible while controller-runtime retries with backoff.
		err = failure
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

// writeStatus sends the difference between the Logger's status and want as
// a JSON merge patch to loggers/status, as for tickets
// (flightticket_controller.go), and reports whether it wrote.
func (r *LoggerReconciler) writeStatus(ctx context.Context, l *examplev1.Logger, want examplev1.LoggerStatus) (bool, error) {
	if equality.Semantic.DeepEqual(l.Status, want) {
		return false, nil
	}
	patch := client.MergeFrom(l.DeepCopy())
	l.Status = want
	if err := r.Status().Patch(ctx, l, patch); err != nil {
		return false, fmt.Errorf("writing status: %w", err)
	}
	logf.FromContext(ctx).Info("status written", "state", want.State)
	return true, nil
}

// adopt makes the Logger the controller of d, a Deployment that carries our
// labels (the cache holds no other) and has no controller: it was made for
// this Logger, by stage 05, which set no owner reference, or for an earlier
// Logger of the same name deleted with --cascade=orphan. Adopting it keeps
// its pods running; a drift is repaired by the reconcile that the adoption's
// own event brings. A Deployment with another controller is never taken
// over.
func (r *LoggerReconciler) adopt(ctx context.Context, l *examplev1.Logger, d *appsv1.Deployment) (*deploymentFailure, error) {
	if owner := metav1.GetControllerOf(d); owner != nil {
		return &deploymentFailure{examplev1.ReasonNotOwned, fmt.Errorf("the Deployment %s is controlled by %s %s, not by this Logger; not touching it", d.Name, owner.Kind, owner.Name)}, nil
	}
	// A merge patch replaces the list of owner references whole, so it
	// carries the resourceVersion (MergeFromWithOptimisticLock): a conflict
	// is retried rather than dropping an owner added meanwhile.
	patch := client.MergeFromWithOptions(d.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if err := controllerutil.SetControllerReference(l, d, r.Scheme()); err != nil {
		return nil, err
	}
	if err := r.Patch(ctx, d, patch); apierrors.IsConflict(err) {
		return nil, err
	} else if err != nil {
		return &deploymentFailure{examplev1.ReasonUpdateFailed, fmt.Errorf("adopting Deployment %s: %w", d.Name, err)}, nil
	}
	r.Recorder.Eventf(l, d, corev1.EventTypeNormal, EventReasonUpdated, "Update", "Deployment %s adopted", d.Name)
	logf.FromContext(ctx).Info("adopted deployment", "deployment", d.Name)
	return nil, nil
}

// deploymentFailure is the API server's refusal to let the operator make
// the Deployment right. Its reason becomes the reason of the Degraded
// condition. Other errors (a 409 Conflict because the cache was a step
// behind, the cache failing) are retried with backoff too, but do not make
// the Logger Degraded: they will most likely pass on the next try.
type deploymentFailure struct {
	reason string // examplev1.ReasonCreateFailed, ReasonUpdateFailed or ReasonNotOwned
	err    error
}

func (f *deploymentFailure) Error() string { return f.err.Error() }
func (f *deploymentFailure) Unwrap() error { return f.err }

package controller

import (
	"context"
	"encoding/json"
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
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	examplev1 "github.com/operator-flow/operator-flow/advanced/A2-admission-webhook/api/example/v1"
)

// The permissions of the Logger controller, for controller-gen. Reads go to
// the cache, which lists and watches; "get" is for the two reads that must
// see the API server itself (Reader, below). No "delete" on Deployments any
// more: the garbage collector deletes them.
// loggers/finalizers: the Deployment's owner reference sets
// blockOwnerDeletion, and clusters that enable the
// OwnerReferencesPermissionEnforcement admission plugin (OpenShift does)
// allow that only to whoever may update the owner's finalizers.
//
// +kubebuilder:rbac:groups=example.com,resources=loggers,verbs=get;list;watch
// +kubebuilder:rbac:groups=example.com,resources=loggers/status,verbs=patch
// +kubebuilder:rbac:groups=example.com,resources=loggers/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// LoggerReconciler is the Logger controller.
type LoggerReconciler struct {
	client.Client
	// Image is the logger container's image (the --logger-image flag).
	Image    string
	Recorder recorder.EventRecorder
	// Reader reads from the API server, past the cache
	// (mgr.GetAPIReader()), in the two cases where the cache cannot know:
	// before creating a Deployment, and after a create refused as
	// AlreadyExists.
	Reader client.Reader
}

// SetupWithManager registers the controller: it reconciles a Logger when the
// Logger changes (For) and when a Deployment it controls changes (Owns),
// workers at a time (04's --workers). Owns replaces 05's handleObject: it
// maps a Deployment event to the Logger named in the Deployment's controller
// owner reference, not to the one its labels name. No predicate, as for
// tickets (flightticket_controller.go says why): the status depends on the
// Deployment, seen through another informer than the Logger, so a status
// can be decided from a Logger cache that has not yet seen the previous
// status write, and the event of that write is what sets it right.
func (r *LoggerReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&examplev1.Logger{}).
		Owns(&appsv1.Deployment{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// CacheByObject tells the Manager's cache to hold only the Deployments this
// operator made (main.go passes it to cache.Options.ByObject), as 04's
// informer did with its label selector, and of the ConfigMaps only the seat
// holds in the ledger namespace.
func CacheByObject(ledgerNamespace string) map[client.Object]cache.ByObject {
	deployments, _ := labels.Parse(managedBySelector) // constants that parse
	holds, _ := labels.Parse(seatHoldSelector)
	return map[client.Object]cache.ByObject{
		&appsv1.Deployment{}: {Label: deployments},
		&corev1.ConfigMap{}:  {Label: holds, Namespaces: map[string]cache.Config{ledgerNamespace: {}}},
	}
}

// Reconcile is the Logger controller's syncHandler. It makes the Logger's
// Deployment match the Logger, then sets the Logger's conditions from the
// Deployment. Its key comes from the Logger's own events and from its
// Deployment's (drift), and it does the same whichever it was.
// controller-runtime's workers call it with the key, as 04's called
// syncLogger; a 409 Conflict is requeued, not an error (requeueOnConflict).
func (r *LoggerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	defer func() { result, err = requeueOnConflict(ctx, result, err) }()
	log := logf.FromContext(ctx) // carries the Logger's namespace and name

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
	want, err := r.ownedDeployment(&l)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Step 4: create, adopt or repair the Deployment. The API server's
	// refusal to create, adopt or repair the Deployment is a failure: a Warning Event, the Degraded condition, and the error
	// returned at the end, so that controller-runtime retries with backoff.
	wrote := true
	var failure *deploymentFailure
	var d appsv1.Deployment
	err = r.Get(ctx, client.ObjectKeyFromObject(want), &d)
	switch {
	case apierrors.IsNotFound(err):
		// The Deployment's delete event can come before the Logger's: the
		// garbage collector deletes the Deployment of a deleted Logger, and
		// the two kinds have an informer each. A Deployment made for a
		// Logger still in a lagging cache would name an owner that is gone.
		// So ask the API server first.
		if gone, err := r.loggerGone(ctx, &l); err != nil || gone {
			return ctrl.Result{}, err
		}
		if err := r.Create(ctx, want); apierrors.IsAlreadyExists(err) {
			// The cache lacks a Deployment that the API server has: ours,
			// made a moment ago, whose event has not reached the cache;
			// ours, with the managed-by label removed; or someone else's.
			if failure, err = r.claim(ctx, &l, want, &d); err != nil {
				return ctrl.Result{}, err
			}
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
		recordFailure(r.Recorder, &l, "Reconcile", "%v", failure)
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

// ownedDeployment is the Deployment l's spec asks for, with l as its
// controller owner (controller: true, blockOwnerDeletion: true). That one
// reference does two jobs: the garbage collector deletes the Deployment
// when l is gone, operator or not, and Owns (SetupWithManager) maps the
// Deployment's events to l.
func (r *LoggerReconciler) ownedDeployment(l *examplev1.Logger) (*appsv1.Deployment, error) {
	want := desiredDeployment(l.Namespace, l.Name, l.Spec, r.Image)
	if err := controllerutil.SetControllerReference(l, want, r.Scheme()); err != nil {
		return nil, err
	}
	return want, nil
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
// a JSON merge patch to loggers/status, with the resourceVersion of the
// cached copy, as for tickets (flightticket_controller.go says why), and
// reports whether it wrote.
func (r *LoggerReconciler) writeStatus(ctx context.Context, l *examplev1.Logger, want examplev1.LoggerStatus) (bool, error) {
	if equality.Semantic.DeepEqual(l.Status, want) {
		return false, nil
	}
	patch := client.MergeFromWithOptions(l.DeepCopy(), client.MergeFromWithOptimisticLock{})
	l.Status = want
	if err := r.Status().Patch(ctx, l, patch); err != nil {
		return false, fmt.Errorf("writing status: %w", err)
	}
	logf.FromContext(ctx).Info("status written", "state", want.State)
	return true, nil
}

// loggerGone asks the API server whether l is gone, or being deleted: then
// its Deployment must not be made again.
func (r *LoggerReconciler) loggerGone(ctx context.Context, l *examplev1.Logger) (bool, error) {
	var live examplev1.Logger
	err := r.Reader.Get(ctx, client.ObjectKeyFromObject(l), &live)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, err
	case live.UID == l.UID && live.DeletionTimestamp.IsZero():
		return false, nil
	}
	logf.FromContext(ctx).Info("the Logger is gone or going; not making its deployment")
	return true, nil
}

// claim deals with a create of want refused as AlreadyExists. It reads the
// Deployment from the API server into d. One controlled by l is ours: made
// a moment ago, or with the managed-by label removed, which took it out of
// the cache. A merge patch puts the labels back (and the Deployment into
// the cache), and repairPatch the spec, if it drifted. Any other is someone else's, never taken over: a failure,
// retried with backoff in case it goes away.
func (r *LoggerReconciler) claim(ctx context.Context, l *examplev1.Logger, want, d *appsv1.Deployment) (*deploymentFailure, error) {
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(want), d); err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(d, l) {
		return &deploymentFailure{examplev1.ReasonNotOwned, fmt.Errorf("a Deployment named %s exists and is not this Logger's; not touching it", want.Name)}, nil
	}
	labelled := labels.SelectorFromSet(want.Labels).Matches(labels.Set(d.Labels))
	if labelled && !deploymentDrifted(d, want) {
		return nil, nil // made a moment ago: its event is on the way
	}
	if !labelled {
		// A merge patch adds these labels to the others, and brings the
		// Deployment back into the cache.
		relabel, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": want.Labels}}) // cannot fail
		if err := r.Patch(ctx, d, client.RawPatch(types.MergePatchType, relabel)); err != nil {
			return &deploymentFailure{examplev1.ReasonUpdateFailed, fmt.Errorf("labelling Deployment %s: %w", want.Name, err)}, nil
		}
	}
	if deploymentDrifted(d, want) {
		if err := r.Patch(ctx, d, client.RawPatch(types.MergePatchType, repairPatch(want))); err != nil {
			return &deploymentFailure{examplev1.ReasonUpdateFailed, fmt.Errorf("updating Deployment %s: %w", want.Name, err)}, nil
		}
	}
	r.Recorder.Eventf(l, d, corev1.EventTypeNormal, EventReasonUpdated, "Update", "Deployment %s repaired", d.Name)
	logf.FromContext(ctx).Info("repaired deployment", "deployment", want.Name)
	return nil, nil
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
// condition. Other errors do not make the Logger Degraded: the cache
// failing is retried with backoff too, and a 409 Conflict because the cache
// was a step behind is requeued (requeueOnConflict); they will most likely
// pass on the next try.
type deploymentFailure struct {
	reason string // examplev1.ReasonCreateFailed, ReasonUpdateFailed or ReasonNotOwned
	err    error
}

func (f *deploymentFailure) Error() string { return f.err.Error() }
func (f *deploymentFailure) Unwrap() error { return f.err }

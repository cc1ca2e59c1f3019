package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	examplev1 "github.com/operator-flow/operator-flow/06-status-and-owners/api/example/v1"
)

// The permissions of the Logger controller, for controller-gen. No "get":
// reads go to the cache, which lists and watches. No "delete" on
// Deployments any more: the garbage collector deletes them.
//
// loggers/finalizers: the Deployment's owner reference sets
// blockOwnerDeletion, and clusters that enable the
// OwnerReferencesPermissionEnforcement admission plugin (OpenShift does)
// allow that only to whoever may update the owner's finalizers.
//
// +kubebuilder:rbac:groups=example.com,resources=loggers,verbs=list;watch
// +kubebuilder:rbac:groups=example.com,resources=loggers/status,verbs=patch
// +kubebuilder:rbac:groups=example.com,resources=loggers/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=list;watch;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// LoggerReconciler keeps one Deployment per Logger, owned by it, repairs
// drift in it, and writes the Logger's conditions.
type LoggerReconciler struct {
	client.Client
	// Image is the logger container's image (the --logger-image flag).
	Image    string
	Recorder recorder.EventRecorder
}

// SetupWithManager registers the controller. It reconciles a Logger when the
// Logger's spec changes (For) and when a Deployment it controls changes
// (Owns), so that a Deployment scaled, edited or deleted behind the
// operator's back is repaired, and a Deployment becoming available updates
// the conditions.
//
// Owns maps a Deployment event to the Logger named in the Deployment's
// controller owner reference: no labels to trust, and a Deployment someone
// else made never wakes a Logger.
//
// GenerationChangedPredicate on the Logger drops its status-only updates,
// as for tickets (flightticket_controller.go says why). A Logger's status
// depends on its Deployment, and that dependency has a watch of its own
// (Owns, no predicate), so no change the predicate drops is one the
// reconciler needs to see.
func (r *LoggerReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&examplev1.Logger{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// Reconcile makes the world match one Logger. It is called with the Logger's
// namespace/name, not with an event: it looks at what exists now and acts on
// that, so it is the same code whether the Logger was created or edited, or
// its Deployment was changed.
func (r *LoggerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	// 1. Read the Logger from the cache (a deep copy, ours to change).
	var logger examplev1.Logger
	if err := r.Get(ctx, req.NamespacedName, &logger); err != nil {
		// NotFound: the Logger is gone. Its Deployment names it as owner,
		// so the garbage collector deletes the Deployment: nothing is left
		// to us, whether we ran when the Logger was deleted or not.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}

	// 2. Being deleted: with foreground deletion the Logger stays until the
	//    garbage collector has deleted its Deployment. Creating or
	//    repairing the Deployment now would fight the garbage collector.
	if !logger.DeletionTimestamp.IsZero() {
		log.Info("being deleted; the garbage collector removes its deployment")
		return ctrl.Result{}, nil
	}

	// 3. Work out the Deployment the Logger asks for, owned by the Logger.
	want := desiredDeployment(&logger, r.Image)
	if err := controllerutil.SetControllerReference(&logger, want, r.Scheme()); err != nil {
		return ctrl.Result{}, err
	}

	// 4. Create it, adopt it, or repair it when it drifted.
	have, wrote, failure, err := r.ensureDeployment(ctx, &logger, want)
	if err != nil {
		return ctrl.Result{}, err
	}

	// 5. Report: conditions (and the state derived from them), written
	//    only when they changed.
	status := loggerStatus(&logger, have, failure)
	if equality.Semantic.DeepEqual(logger.Status, status) {
		if failure != nil {
			return ctrl.Result{}, failure
		}
		if !wrote {
			// docs/behaviour.md: "in sync" plus namespace/name, which
			// tests and `make bench` wait for.
			log.Info("in sync", "key", req.String())
		}
		return ctrl.Result{}, nil
	}
	// A merge patch of what changed, sent to the /status subresource,
	// where it can touch nothing but status.
	patch := client.MergeFrom(logger.DeepCopy())
	logger.Status = status
	if err := r.Status().Patch(ctx, &logger, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing status: %w", err)
	}
	log.Info("status written", "state", status.State)
	if failure != nil {
		// Returned after the status write, so that the Degraded condition
		// is visible while the controller retries with backoff.
		return ctrl.Result{}, failure
	}
	return ctrl.Result{}, nil
}

// deploymentFailure is an API server's refusal to let the operator make
// the Deployment right. It becomes the Degraded condition, a Warning Event
// and the error Reconcile returns, which retries it with backoff.
type deploymentFailure struct {
	reason string // examplev1.ReasonCreateFailed, ReasonUpdateFailed or ReasonNotOwned
	err    error
}

func (f *deploymentFailure) Error() string { return f.err.Error() }
func (f *deploymentFailure) Unwrap() error { return f.err }

// ensureDeployment makes the Logger's Deployment what want says. It returns
// the Deployment as it now is (nil when there is none that the Logger
// controls), whether it wrote it, and the failure that stopped it, if any.
// Errors that will most likely pass on a retry (a 409 Conflict because the
// cache was a step behind, the cache failing) are returned as err: they are
// retried with backoff too, but do not make the Logger Degraded.
func (r *LoggerReconciler) ensureDeployment(ctx context.Context, logger *examplev1.Logger, want *appsv1.Deployment) (have *appsv1.Deployment, wrote bool, failure *deploymentFailure, err error) {
	log := logf.FromContext(ctx)
	have = &appsv1.Deployment{}
	err = r.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		// A failed create (a ResourceQuota, an admission policy, the API
		// server being away) makes the Logger Degraded until a retry
		// succeeds, while the other Loggers carry on.
		if err := r.Create(ctx, want); apierrors.IsAlreadyExists(err) {
			return nil, false, nil, err // the cache has not seen it yet
		} else if err != nil {
			return nil, false, r.failed(logger, examplev1.ReasonCreateFailed, fmt.Errorf("creating deployment %s: %w", want.Name, err)), nil
		}
		r.Recorder.Eventf(logger, want, corev1.EventTypeNormal, ReasonCreated, "Create", "Created deployment %s", want.Name)
		log.Info("created deployment", "deployment", want.Name)
		return want, true, nil, nil
	case err != nil:
		return nil, false, nil, err
	}

	controlled := metav1.IsControlledBy(have, logger)
	switch {
	case !controlled && (metav1.GetControllerOf(have) != nil || !managedFor(have, logger.Name)):
		// Someone else's Deployment has the name we need. Never take it
		// over; say so, and try again later in case it goes away.
		return nil, false, r.failed(logger, examplev1.ReasonNotOwned, fmt.Errorf("deployment %s exists and is not controlled by this Logger; not touching it", have.Name)), nil
	case controlled && !drifted(have, want):
		return have, false, nil, nil
	}

	// Adopt or repair. An orphan carrying our labels was made for this
	// Logger: by stage 05, which set no owner reference, or by an earlier
	// Logger of the same name deleted with --cascade=orphan. Adopting it
	// (adding the owner reference) keeps its pods running.
	action := "repaired"
	if !controlled {
		action = "adopted"
		if err := controllerutil.SetControllerReference(logger, have, r.Scheme()); err != nil {
			return nil, false, nil, err
		}
	}
	repair(have, want)
	if err := r.Update(ctx, have); apierrors.IsConflict(err) {
		return nil, false, nil, err // the cache was a version behind
	} else if err != nil {
		return nil, false, r.failed(logger, examplev1.ReasonUpdateFailed, fmt.Errorf("updating deployment %s: %w", have.Name, err)), nil
	}
	r.Recorder.Eventf(logger, have, corev1.EventTypeNormal, ReasonUpdated, "Update", "Deployment %s %s", have.Name, action)
	log.Info(action+" deployment", "deployment", have.Name)
	return have, true, nil, nil
}

// failed records a Warning Event for a failure and returns it.
func (r *LoggerReconciler) failed(logger *examplev1.Logger, reason string, err error) *deploymentFailure {
	r.Recorder.Eventf(logger, nil, corev1.EventTypeWarning, ReasonFailed, "Reconcile", "%v", err)
	return &deploymentFailure{reason: reason, err: err}
}

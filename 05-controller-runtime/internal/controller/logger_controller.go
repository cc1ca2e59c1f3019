package controller

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
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
// +kubebuilder:rbac:groups=example.com,resources=loggers,verbs=list;watch;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=list;watch;create;update;delete

// LoggerReconciler keeps one Deployment per Logger, repairs drift in it,
// deletes it when the Logger is gone, and writes the Logger's status.state.
type LoggerReconciler struct {
	client.Client
	// Image is the logger container's image (the --logger-image flag).
	Image string
}

// SetupWithManager registers the controller. It reconciles a Logger when the
// Logger changes (For) and when one of its Deployments changes (Watches), so
// that a Deployment scaled, edited or deleted behind the operator's back is
// repaired, and a Deployment becoming available updates status.state.
func (r *LoggerReconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&examplev1.Logger{}).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(loggerForDeployment)).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// loggerForDeployment maps a Deployment event to the Logger to reconcile.
//
// Stage 06 sets an owner reference on the Deployment and replaces this
// function with Owns(&appsv1.Deployment{}), which maps through that
// reference. Here there is none yet, so the Deployment's labels name its
// Logger. managed-by is checked too, because other tools (Helm, for one) use
// the instance label as well; their Deployments must not wake our Loggers.
func loggerForDeployment(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[labelManagedBy] != managedBy || l[labelInstance] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[labelInstance]}}}
}

// Reconcile makes the world match one Logger. It is called with the Logger's
// namespace/name, not with an event: it looks at what exists now and acts on
// that, so it is the same code whether the Logger was created, edited or
// deleted, or its Deployment was changed.
func (r *LoggerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := logf.FromContext(ctx)

	// 1. Read the Logger from the cache (a deep copy, ours to change).
	var logger examplev1.Logger
	if err := r.Get(ctx, req.NamespacedName, &logger); apierrors.IsNotFound(err) {
		// 2. The Logger is gone. Without an owner reference (stage 06) no
		//    garbage collector will remove its Deployment, so we do. Note
		//    what triggers this: not a delete event we must not miss, but
		//    any reconcile of a name that no longer exists. When a Logger
		//    is deleted while the operator is down, the Deployment watch
		//    lists its Deployment at start-up, maps it here, and this step
		//    cleans up after all.
		return ctrl.Result{}, r.deleteDeployment(ctx, req.NamespacedName)
	} else if err != nil {
		return ctrl.Result{}, err
	}

	// 3. Work out the Deployment the Logger asks for.
	want := desiredDeployment(&logger, r.Image)

	// 4. Create it, or repair it when it drifted.
	var have appsv1.Deployment
	err := r.Get(ctx, client.ObjectKeyFromObject(want), &have)
	switch {
	case apierrors.IsNotFound(err):
		// A failed create (a ResourceQuota, an admission webhook, the API
		// server being away) is returned as an error: controller-runtime
		// logs it with the Logger's name and retries with exponential
		// backoff, while the other Loggers carry on.
		if err := r.Create(ctx, want); err != nil {
			return ctrl.Result{}, fmt.Errorf("creating deployment %s: %w", want.Name, err)
		}
		log.Info("created deployment", "deployment", want.Name)
		have = *want
	case err != nil:
		return ctrl.Result{}, err
	case !managedFor(&have, logger.Name):
		// Someone else's Deployment has the name we need. Never take it
		// over; say so, and try again later in case it goes away.
		return ctrl.Result{}, fmt.Errorf("deployment %s exists and is not managed by %s; not touching it", have.Name, managedBy)
	case drifted(&have, want):
		repair(&have, want)
		if err := r.Update(ctx, &have); err != nil {
			return ctrl.Result{}, fmt.Errorf("repairing deployment %s: %w", have.Name, err)
		}
		log.Info("repaired deployment", "deployment", have.Name)
	}

	// 5. Report whether its pods are up, writing only when the state
	//    changed. As for tickets, a merge patch of just status.state: the
	//    Deployment events that brought us here often arrive before the
	//    event of our own last write, so the cached Logger is a version
	//    behind, and an Update would fail with 409 Conflict for nothing.
	state := loggerState(&have)
	if logger.Status.State == state {
		// docs/behaviour.md: "in sync" plus namespace/name, which tests
		// and `make bench` wait for.
		log.Info("in sync", "key", req.String())
		return ctrl.Result{}, nil
	}
	patch := client.MergeFrom(logger.DeepCopy())
	logger.Status.State = state
	if err := r.Patch(ctx, &logger, patch); err != nil {
		return ctrl.Result{}, fmt.Errorf("writing status: %w", err)
	}
	log.Info("status written", "state", state)
	return ctrl.Result{}, nil
}

// deleteDeployment removes the Deployment of a Logger that no longer exists,
// if it is one this operator made.
func (r *LoggerReconciler) deleteDeployment(ctx context.Context, logger types.NamespacedName) error {
	var d appsv1.Deployment
	key := types.NamespacedName{Namespace: logger.Namespace, Name: deploymentName(logger.Name)}
	if err := r.Get(ctx, key, &d); err != nil {
		return client.IgnoreNotFound(err) // nothing left to clean up
	}
	if !managedFor(&d, logger.Name) {
		return nil
	}
	// The UID precondition makes the API server refuse the delete if the
	// Deployment was replaced by another of the same name since the cache
	// saw it.
	if err := r.Delete(ctx, &d, client.Preconditions{UID: &d.UID}); err != nil {
		return client.IgnoreNotFound(err)
	}
	logf.FromContext(ctx).Info("deleted deployment of a deleted logger", "deployment", d.Name)
	return nil
}

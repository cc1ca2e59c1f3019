package main

import (
	"context"
	"fmt"
	"log"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	examplev1 "github.com/operator-flow/operator-flow/04-workqueue/api/example/v1"
)

// syncLogger is the Logger controller's syncHandler. It makes the Logger's
// Deployment match the Logger, then sets the Logger's status.state from the
// Deployment; when the Logger is gone, it deletes the Deployment. Its key
// comes from the Logger's own events and from its Deployment's (drift), and
// it does the same whichever it was.
func (o *operator) syncLogger(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return fmt.Errorf("%w: %v", errPermanent, err) // not a key our handlers make
	}
	l, err := o.loggers.Loggers(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// The Logger is gone. The queue holds names, not events, so this is
		// what a delete looks like here. It also catches a Logger deleted
		// while the operator was down: at start-up the Deployment informer
		// lists its Deployment, handleObject queues the Logger, and here it
		// is, gone.
		return o.deleteDeployment(ctx, namespace, name)
	} else if err != nil {
		return err
	}
	if err := checkSpec(l.Spec); err != nil {
		return err
	}
	want := desiredDeployment(namespace, name, l.Spec, o.image)
	deployments := o.kube.AppsV1().Deployments(namespace)
	wrote := true
	d, err := o.deployments.Deployments(namespace).Get(want.Name)
	switch {
	case apierrors.IsNotFound(err):
		d, err = deployments.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Not in the cache, yet there: one of two cases. It is ours,
			// made a moment ago, and its event has not arrived yet; that
			// event queues this Logger again. Or it is someone else's,
			// without the managed-by label: the cache never holds it, no
			// event follows, and we leave it alone, with the Logger's status
			// as it was.
			log.Printf("Deployment %s/%s exists but is not in the cache: ours, whose event will follow, or someone else's, which we leave alone", namespace, want.Name)
			return nil
		} else if err != nil {
			// Returned, so the queue tries again with backoff (a quota, an
			// admission policy, the API server being away).
			return fmt.Errorf("creating Deployment %s: %w", want.Name, err)
		}
		log.Printf("created Deployment %s/%s", namespace, want.Name)
	case err != nil:
		return err
	case deploymentDrifted(d, want):
		if d, err = deployments.Patch(ctx, want.Name, types.MergePatchType, repairPatch(want), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("updating Deployment %s: %w", want.Name, err)
		}
		log.Printf("updated Deployment %s/%s", namespace, want.Name)
	default:
		wrote = false
	}
	changed, err := o.writeState(ctx, l, loggerState(d))
	if err == nil && !changed && !wrote {
		log.Printf("in sync loggers %s/%s", namespace, name)
	}
	return err
}

// checkSpec refuses a spec the operator cannot act on: an interval under a
// second makes a pod that prints without pause, and the API server refuses a
// Deployment with negative replicas every time. 01's CRD rejects both, but
// an object stored before its schema had these bounds can still carry them.
// Trying again would not change the spec, so the error is permanent.
func checkSpec(s examplev1.LoggerSpec) error {
	if s.TimeInterval < 1 {
		return fmt.Errorf("%w: spec.timeInterval is %d, and must be at least 1", errPermanent, s.TimeInterval)
	}
	if r := ptr.Deref(s.Replicas, 1); r < 0 {
		return fmt.Errorf("%w: spec.replicas is %d, and must not be negative", errPermanent, r)
	}
	return nil
}

// writeState sets status.state, with an Update of the whole Logger (no
// status subresource yet), when it differs. It reports whether it wrote.
func (o *operator) writeState(ctx context.Context, l *examplev1.Logger, state string) (bool, error) {
	if l.Status.State == state {
		return false, nil
	}
	l = l.DeepCopy() // l is the cache's copy
	l.Status.State = state
	if _, err := o.client.ExampleV1().Loggers(l.Namespace).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		return false, fmt.Errorf("writing status: %w", err)
	}
	log.Printf("state %s loggers %s/%s", state, l.Namespace, l.Name)
	return true, nil
}

// deleteDeployment removes the Deployment of a Logger that no longer exists,
// if there is one: the cache says, without a request. The cache holds only
// Deployments labelled managed-by this operator, so a Deployment of the same
// name that someone else made is never touched.
func (o *operator) deleteDeployment(ctx context.Context, namespace, logger string) error {
	d, err := o.deployments.Deployments(namespace).Get(deploymentName(logger))
	if apierrors.IsNotFound(err) {
		return nil // nothing left to clean up
	} else if err != nil {
		return err
	}
	// Background: the API server answers at once, and the garbage collector
	// then removes the Deployment's ReplicaSets and pods. The UID
	// precondition makes the API server refuse if the Deployment was
	// replaced by another of the same name since the cache saw it.
	err = o.kube.AppsV1().Deployments(namespace).Delete(ctx, d.Name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		Preconditions:     metav1.NewUIDPreconditions(string(d.UID)),
	})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("deleting Deployment %s: %w", d.Name, err)
	}
	log.Printf("deleted Deployment %s/%s", namespace, d.Name)
	return nil
}

// handleObject queues the Logger that a Deployment event concerns: a
// Deployment scaled, edited or deleted behind our back is drift to repair,
// and one whose pods became available changes its Logger's state. Nothing
// but its labels links a Deployment to its Logger (owner references are
// stage 06's lesson). The informer holds only Deployments labelled
// managed-by this operator; app.kubernetes.io/instance names the Logger.
func (o *operator) handleObject(obj metav1.Object) {
	logger := obj.GetLabels()[instanceLabel]
	if logger == "" {
		log.Printf("deployments: %s has no %s label: not the Deployment of a Logger", key(obj), instanceLabel)
		return
	}
	o.loggerController.queue.Add(obj.GetNamespace() + "/" + logger)
}

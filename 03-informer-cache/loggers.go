package main

import (
	"context"
	"fmt"
	"log"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	examplev1 "github.com/operator-flow/operator-flow/03-informer-cache/api/example/v1"
)

// handleLogger keeps the Deployment of a new or changed Logger, and deletes
// it when the Logger is deleted.
func (o *operator) handleLogger(ctx context.Context, typ watch.EventType, obj metav1.Object) error {
	if typ == watch.Deleted {
		return o.deleteDeployment(ctx, obj.GetNamespace(), obj.GetName())
	}
	return o.syncLogger(ctx, obj.GetNamespace(), obj.GetName())
}

// handleDeployment: one of our Deployments changed or went away. Whatever
// happened, its Logger's sync puts it right: it compares the Deployment with
// what the Logger asks for (drift repair) and updates the Logger's state.
func (o *operator) handleDeployment(ctx context.Context, typ watch.EventType, obj metav1.Object) error {
	logger := obj.GetLabels()[instanceLabel]
	if logger == "" {
		return fmt.Errorf("no %s label: not the Deployment of a Logger", instanceLabel)
	}
	return o.syncLogger(ctx, obj.GetNamespace(), logger)
}

// syncLogger makes the Logger's Deployment match the Logger, then sets the
// Logger's status.state from the Deployment.
func (o *operator) syncLogger(ctx context.Context, namespace, name string) error {
	l, err := o.loggers.Loggers(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // deleted since; its DELETED event follows
	} else if err != nil {
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
			// event runs this sync again. Or it is someone else's, without
			// the managed-by label: the cache never holds it, no event
			// follows, and we leave it alone, with the Logger's status as
			// it was.
			log.Printf("Deployment %s/%s exists but is not in the cache: ours, whose event will follow, or someone else's, which we leave alone", namespace, want.Name)
			return nil
		} else if err != nil {
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

// deleteDeployment removes a deleted Logger's Deployment. Nothing links the
// two but their names, so this DELETED event is the operator's only chance:
// if it is missed (the operator was not running), the Deployment stays.
func (o *operator) deleteDeployment(ctx context.Context, namespace, logger string) error {
	name := deploymentName(logger)
	// Background: the API server answers at once, and the garbage collector
	// then removes the Deployment's ReplicaSets and pods.
	err := o.kube.AppsV1().Deployments(namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("deleting Deployment %s: %w", name, err)
	}
	log.Printf("deleted Deployment %s/%s", namespace, name)
	return nil
}

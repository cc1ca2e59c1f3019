package main

import (
	"context"
	"fmt"
	"log"
	"math"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

var loggersGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "loggers"}

// status.state of a Logger.
const (
	stateAvailable   = "Available"
	stateUnavailable = "Unavailable"
)

// loggerSpec is what the operator reads from a Logger's spec.
type loggerSpec struct {
	Name         string
	TimeInterval int64
	Replicas     int32
}

// handleLogger keeps the Deployment of a new or changed Logger, and deletes
// it when the Logger is deleted.
func (o *operator) handleLogger(ctx context.Context, typ watch.EventType, obj metav1.Object) error {
	if typ == watch.Deleted {
		return o.deleteDeployment(ctx, obj.GetNamespace(), obj.GetName())
	}
	return o.syncLogger(ctx, obj.GetNamespace(), obj.GetName())
}

// handleDeployment: one of our Deployments changed, so its Logger's
// status.state may be out of date. Only the state: whether the Deployment
// still looks the way the Logger asks is checked when the Logger changes,
// never here (see README: nothing repairs a scaled or deleted Deployment).
func (o *operator) handleDeployment(ctx context.Context, typ watch.EventType, obj metav1.Object) error {
	logger := obj.GetLabels()[instanceLabel]
	if logger == "" {
		return fmt.Errorf("no %s label: not the Deployment of a Logger", instanceLabel)
	}
	return o.syncLoggerState(ctx, obj.GetNamespace(), logger)
}

// syncLogger makes the Logger's Deployment match the Logger, then sets the
// Logger's status.state from the Deployment.
func (o *operator) syncLogger(ctx context.Context, namespace, name string) error {
	r := o.dyn.Resource(loggersGVR).Namespace(namespace)
	u, err := r.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // deleted since; its DELETED event follows
	} else if err != nil {
		return err
	}
	spec, err := parseLogger(u)
	if err != nil {
		return err
	}
	want := desiredDeployment(namespace, name, spec, o.image)
	deployments := o.kube.AppsV1().Deployments(namespace)
	wrote := true
	d, err := deployments.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if d, err = deployments.Create(ctx, want, metav1.CreateOptions{}); err != nil {
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
	changed, err := o.writeState(ctx, u, loggerState(d))
	if err == nil && !changed && !wrote {
		log.Printf("in sync loggers %s/%s", namespace, name)
	}
	return err
}

// syncLoggerState sets a Logger's status.state from its Deployment, and
// nothing else.
func (o *operator) syncLoggerState(ctx context.Context, namespace, name string) error {
	u, err := o.dyn.Resource(loggersGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		log.Printf("no Logger %s/%s: nothing to report on", namespace, name)
		return nil
	} else if err != nil {
		return err
	}
	d, err := o.kube.AppsV1().Deployments(namespace).Get(ctx, deploymentName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		d = nil
	} else if err != nil {
		return err
	}
	state := loggerState(d)
	changed, err := o.writeState(ctx, u, state)
	if err == nil && !changed {
		log.Printf("state unchanged loggers %s/%s: %s", namespace, name, state)
	}
	return err
}

// writeState sets status.state, with an Update of the whole Logger (no
// status subresource yet), when it differs. It reports whether it wrote.
func (o *operator) writeState(ctx context.Context, u *unstructured.Unstructured, state string) (bool, error) {
	if current, _, _ := unstructured.NestedString(u.Object, "status", "state"); current == state {
		return false, nil
	}
	if err := unstructured.SetNestedField(u.Object, state, "status", "state"); err != nil {
		return false, err
	}
	if _, err := o.dyn.Resource(loggersGVR).Namespace(u.GetNamespace()).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		return false, fmt.Errorf("writing status: %w", err)
	}
	log.Printf("state %s loggers %s/%s", state, u.GetNamespace(), u.GetName())
	return true, nil
}

// deleteDeployment removes a deleted Logger's Deployment. Nothing links the
// two but their names, so this DELETED event is the operator's only chance:
// if it is missed, the Deployment stays (see README: orphans).
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

// parseLogger reads the spec from the raw JSON; see parseTicket.
func parseLogger(u *unstructured.Unstructured) (loggerSpec, error) {
	var s loggerSpec
	var err error
	if s.Name, err = requiredString(u, "spec", "name"); err != nil {
		return s, err
	}
	if s.TimeInterval, err = requiredInt(u, "spec", "timeInterval"); err != nil {
		return s, err
	}
	// The CRD defaults replicas to 1; an object stored before that default
	// existed may lack it.
	replicas, err := optionalInt(u, 1, "spec", "replicas")
	if err != nil {
		return s, err
	}
	if replicas < 0 || replicas > math.MaxInt32 {
		return s, fmt.Errorf("bad field: .spec.replicas=%d is out of range", replicas)
	}
	s.Replicas = int32(replicas)
	return s, nil
}

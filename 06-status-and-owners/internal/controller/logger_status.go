package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	examplev1 "github.com/operator-flow/operator-flow/06-status-and-owners/api/example/v1"
)

// loggerStatus is the status a Logger should have, given its Deployment (nil
// when there is none it controls) and the failure that stopped the operator
// from making that Deployment right (nil when none).
//
// The three conditions answer three questions a user asks:
//
//	Available    are my pods running?              (True: at least one available replica)
//	Progressing  is a change still rolling out?    (True: not every replica updated and available)
//	Degraded     is something wrong that needs me? (True: the Deployment cannot be created or repaired)
//
// Messages carry no replica counts, which change at every step of a rollout:
// each change would cost a status write, and `kubectl get deployment` shows
// the counts anyway.
func loggerStatus(l *examplev1.Logger, d *appsv1.Deployment, failure *deploymentFailure) examplev1.LoggerStatus {
	name := deploymentName(l.Name)
	var available, progressing, degraded metav1.Condition

	switch {
	case d == nil:
		available = condition(examplev1.ConditionAvailable, false, examplev1.ReasonNoDeployment, "There is no deployment %s of this Logger.", name)
	case d.Status.AvailableReplicas > 0:
		available = condition(examplev1.ConditionAvailable, true, examplev1.ReasonMinimumReplicasAvailable, "Deployment %s has available replicas.", name)
	case d.Spec.Replicas != nil && *d.Spec.Replicas == 0:
		available = condition(examplev1.ConditionAvailable, false, examplev1.ReasonScaledToZero, "spec.replicas is 0: deployment %s runs no pods.", name)
	default:
		available = condition(examplev1.ConditionAvailable, false, examplev1.ReasonNoReplicasAvailable, "Deployment %s has no available replica yet.", name)
	}

	switch {
	case failure != nil:
		progressing = condition(examplev1.ConditionProgressing, false, examplev1.ReasonBlocked, "Blocked: see the Degraded condition.")
		degraded = condition(examplev1.ConditionDegraded, true, failure.reason, "%v", failure.err)
	case d != nil && rolledOut(d):
		progressing = condition(examplev1.ConditionProgressing, false, examplev1.ReasonRolloutComplete, "Deployment %s is rolled out.", name)
		degraded = condition(examplev1.ConditionDegraded, false, examplev1.ReasonAsExpected, "Deployment %s is as this Logger asks.", name)
	default:
		progressing = condition(examplev1.ConditionProgressing, true, examplev1.ReasonRollingOut, "Deployment %s is rolling out.", name)
		degraded = condition(examplev1.ConditionDegraded, false, examplev1.ReasonAsExpected, "Deployment %s is as this Logger asks.", name)
	}

	s := l.Status.DeepCopy()
	s.ObservedGeneration = l.Generation
	setConditions(&s.Conditions, l.Generation, available, progressing, degraded)
	s.State = loggerState(d) // the same test as Available, for the printer column
	return *s
}

// rolledOut reports whether the Deployment controller has acted on the
// Deployment's latest spec and every replica runs it and is available.
func rolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation &&
		s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want
}

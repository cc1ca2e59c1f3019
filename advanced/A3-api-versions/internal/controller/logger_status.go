package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	examplev2 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v2"
)

// loggerStatus is the status a Logger should have, given its Deployment (nil
// when there is none it controls) and the failure that stopped the operator
// from making that Deployment right (nil when none). Its two conditions
// answer the two questions a user asks: are my pods running (Available),
// and is something wrong that needs me (Degraded)? Messages carry no
// replica counts, which change at every step of a rollout: each change
// would cost a status write, and `kubectl get deployment` shows them.
func loggerStatus(l *examplev2.Logger, d *appsv1.Deployment, failure *deploymentFailure) examplev2.LoggerStatus {
	name := deploymentName(l.Name)
	var available, degraded metav1.Condition
	switch {
	case d == nil:
		available = condition(examplev2.ConditionAvailable, false, examplev2.ReasonNoDeployment, "There is no deployment %s of this Logger.", name)
	case d.Status.AvailableReplicas > 0:
		available = condition(examplev2.ConditionAvailable, true, examplev2.ReasonMinimumReplicasAvailable, "Deployment %s has available replicas.", name)
	case d.Spec.Replicas != nil && *d.Spec.Replicas == 0:
		available = condition(examplev2.ConditionAvailable, false, examplev2.ReasonScaledToZero, "spec.replicas is 0: deployment %s runs no pods.", name)
	default:
		available = condition(examplev2.ConditionAvailable, false, examplev2.ReasonNoReplicasAvailable, "Deployment %s has no available replica yet.", name)
	}
	if failure != nil {
		degraded = sameFailure(l.Status.Conditions, l.Generation, condition(examplev2.ConditionDegraded, true, failure.reason, "%v", failure.err))
	} else {
		degraded = condition(examplev2.ConditionDegraded, false, examplev2.ReasonAsExpected, "Deployment %s is as this Logger asks.", name)
	}

	s := l.Status.DeepCopy()
	s.ObservedGeneration = l.Generation
	setConditions(&s.Conditions, l.Generation, available, degraded)
	s.State = loggerState(d) // the same test as Available, for the printer column
	return *s
}

package e2e

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/operator-flow/operator-flow/harness"
)

const quotaName = "no-deployments"

// blockDeployments makes the namespace refuse every new Deployment, and waits
// until the quota controller has counted the namespace: before that the
// quota's status is empty.
func blockDeployments(t *testing.T, w *world) {
	t.Helper()
	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: quotaName},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/deployments.apps": resource.MustParse("0")}},
	}
	quotas := w.C.Kube.CoreV1().ResourceQuotas(w.NS)
	if _, err := quotas.Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, converge, "the quota to be counted", func(ctx context.Context) (bool, string, error) {
		q, err := quotas.Get(ctx, quotaName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		_, counted := q.Status.Hard["count/deployments.apps"]
		return counted, fmt.Sprintf("status %+v", q.Status), nil
	})
}

// unblockDeployments deletes the quota, and waits until the API server
// admits a Deployment again: its quota check reads quotas from a cache,
// which learns of the deletion a moment later.
func unblockDeployments(t *testing.T, w *world) {
	t.Helper()
	if err := w.C.Kube.CoreV1().ResourceQuotas(w.NS).Delete(context.Background(), quotaName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "quota-probe"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"probe": "quota"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"probe": "quota"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "busybox:1.37"}}},
			},
		},
	}
	harness.Eventually(t, converge, "a Deployment to be admitted again", func(ctx context.Context) (bool, string, error) {
		_, err := w.C.Kube.AppsV1().Deployments(w.NS).Create(ctx, probe, metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			return false, err.Error(), nil
		}
		return err == nil, "", err
	})
}

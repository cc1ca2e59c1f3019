package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	svmv1beta1 "k8s.io/api/storagemigration/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operator-flow/operator-flow/harness"
)

// TestStorageVersionMigration: the API server serves
// storagemigration.k8s.io/v1beta1 and kube-controller-manager runs its
// controller (cluster/kwokctl.yaml and cluster/kind.yaml turn both on), so a
// migration of the Loggers reaches Succeeded. With one version there is
// nothing to rewrite: the controller's empty apply of each Logger encodes
// to the bytes already stored, and the API server then skips the write, so
// no Logger's resourceVersion moves.
func TestStorageVersionMigration(t *testing.T) {
	c := clients(t)
	ctx := context.Background()
	ns := c.Namespace(t, "svm")
	loggers := c.Dynamic.Resource(harness.LoggerGVR).Namespace(ns)
	before := map[string]string{}
	for i := range 3 {
		l, err := loggers.Create(ctx, harness.NewLogger(fmt.Sprintf("stored-%d", i), "hello", 5, 0), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		before[l.GetName()] = l.GetResourceVersion()
	}

	svms := c.Kube.StoragemigrationV1beta1().StorageVersionMigrations()
	svm, err := svms.Create(ctx, &svmv1beta1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "loggers-"},
		Spec: svmv1beta1.StorageVersionMigrationSpec{
			Resource: metav1.GroupResource{Group: harness.LoggerGVR.Group, Resource: harness.LoggerGVR.Resource},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a StorageVersionMigration (is storagemigration.k8s.io/v1beta1 served?): %v", err)
	}
	t.Cleanup(func() {
		if err := svms.Delete(context.Background(), svm.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting StorageVersionMigration %s: %v", svm.Name, err)
		}
	})

	// The controller migrates the objects older than a checkpoint, the
	// resourceVersion it records in status, and only once the garbage
	// collector's cache of Loggers has seen that resourceVersion. That
	// cache moves on a Logger's watch event or a watch bookmark, which the
	// API server sends about once a minute. A Logger written after the
	// checkpoint is such an event (and is not migrated: it is newer).
	get := func(ctx context.Context) (*svmv1beta1.StorageVersionMigration, error) {
		return svms.Get(ctx, svm.Name, metav1.GetOptions{})
	}
	harness.Eventually(t, 2*time.Minute, "the migration's checkpoint (status.resourceVersion)", func(ctx context.Context) (bool, string, error) {
		s, err := get(ctx)
		if err != nil {
			return false, "", err
		}
		return s.Status.ResourceVersion != "", fmt.Sprintf("status %+v", s.Status), nil
	})
	if _, err := loggers.Create(ctx, harness.NewLogger("written-after", "hello", 5, 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	harness.Eventually(t, 3*time.Minute, "the migration's Succeeded condition", func(ctx context.Context) (bool, string, error) {
		s, err := get(ctx)
		if err != nil {
			return false, "", err
		}
		if failed := meta.FindStatusCondition(s.Status.Conditions, string(svmv1beta1.MigrationFailed)); failed != nil && failed.Status == metav1.ConditionTrue {
			return false, "", fmt.Errorf("the migration failed: %s", failed.Message)
		}
		return meta.IsStatusConditionTrue(s.Status.Conditions, string(svmv1beta1.MigrationSucceeded)), fmt.Sprintf("conditions %+v", s.Status.Conditions), nil
	})
	t.Logf("StorageVersionMigration %s succeeded %.1fs after its checkpoint", svm.Name, time.Since(start).Seconds())

	for name, rv := range before {
		l, err := loggers.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.GetResourceVersion() != rv {
			t.Errorf("Logger %s: resourceVersion %s after the migration, %s before: a migration to the version it is stored in wrote it", name, l.GetResourceVersion(), rv)
		}
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	svmv1beta1 "k8s.io/api/storagemigration/v1beta1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/etcd"
)

// TestStorageMigration walks the lab's runbook on Loggers written while the
// CRD had v1 only, and reads each step's result from etcd: the upgrade to
// v1 and v2 rewrites nothing; a StorageVersionMigration rewrites every
// Logger as v2 and leaves status.storedVersions [v2]; then v1 can stop
// being served and leave the CRD, and the operator, on v2, works.
func TestStorageMigration(t *testing.T) {
	withCluster(t, "the storage migration, proven from etcd", func(t *testing.T, cfg *envconf.Config) {
		w := harness.NewWorld(t, cfg, "a3-migrate", modulePackage)
		ctx := context.Background()
		crds, err := apiextensionsclient.NewForConfig(w.C.Config)
		if err != nil {
			t.Fatal(err)
		}

		// 0. The cluster as module A2 leaves it: the Logger CRD with v1
		// only. At the end the module's CRD goes back, with the
		// package's converter.
		if err := deleteCRD(ctx, crds, loggerCRD); err != nil {
			t.Fatalf("deleting the Logger CRD: %v", err)
		}
		t.Cleanup(func() {
			if err := installCRDs(w.C.Config, packageConverter); err != nil {
				t.Errorf("installing the module's CRDs again: %v", err)
			}
		})
		if err := w.C.InstallCRDs(ctx, harness.RepoPath("advanced", "A2-admission-webhook", "config", "crd", "example.com_loggers.yaml")); err != nil {
			t.Fatalf("installing A2's Logger CRD: %v", err)
		}

		// 1. Loggers written as v1, stored as v1.
		const n = 4
		names := make([]string, n)
		for i := range n {
			names[i] = fmt.Sprintf("old-%d", i)
			w.Create(t, loggerGVR, harness.NewLogger(names[i], names[i], int64(i+2), 1))
		}
		expectStored(t, w.NS, names, "example.com/v1")

		// 2. The upgrade: v1 and v2 served, v2 stored. Nothing is
		// rewritten; storedVersions remembers that objects may be v1.
		if err := installCRDs(w.C.Config, packageConverter); err != nil {
			t.Fatalf("installing the module's CRD: %v", err)
		}
		if got := loggerCRDNow(t, crds).Status.StoredVersions; !slices.Equal(got, []string{"v1", "v2"}) {
			t.Fatalf("status.storedVersions after the upgrade: %v, want [v1 v2]", got)
		}
		expectStored(t, w.NS, names, "example.com/v1")

		// 3. v1 cannot leave the CRD while storedVersions lists it.
		crd := loggerCRDNow(t, crds)
		crd.Spec.Versions = crd.Spec.Versions[1:]
		_, err = crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "must remain in spec.versions until a storage migration") {
			t.Fatalf("removing v1 from spec.versions while storedVersions lists it: %v, want it refused", err)
		}
		t.Logf("removing v1 before the migration: %v", err)

		// 4. With no conversion webhook, a v2 read of a Logger stored as
		// v1 fails.
		dead := &envtest.WebhookInstallOptions{LocalServingHost: packageConverter.LocalServingHost}
		if err := dead.PrepWithoutInstalling(); err != nil { // a port nobody serves
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = dead.Cleanup() })
		v1 := w.C.Dynamic.Resource(loggerGVR).Namespace(w.NS)
		v2 := w.C.Dynamic.Resource(loggerV2).Namespace(w.NS)
		readV1 := func(ctx context.Context) error { _, err := v1.Get(ctx, names[0], metav1.GetOptions{}); return err }
		readV2 := func(ctx context.Context) error { _, err := v2.Get(ctx, names[0], metav1.GetOptions{}); return err }
		withConverter(t, w, dead, "a v2 read of a Logger stored as v1", readV2, func() {})

		// 5. The migration: kube-controller-manager's storage version
		// migrator rewrites every Logger, in the storage version.
		migrate(t, w, "written-during-migration")
		expectStored(t, w.NS, append(names, "written-during-migration"), "example.com/v2")

		// 6. Now only a v1 read needs the webhook; a v2 read does not.
		withConverter(t, w, dead, "a v1 read of a Logger stored as v2", readV1, func() {
			if err := readV2(ctx); err != nil {
				t.Errorf("a v2 read after the migration, with no webhook: %v", err)
			}
		})

		// 7. Nothing is stored as v1, and the migrator has said so:
		// on success it sets storedVersions to the storage version alone
		// (the CRD's spec did not change while it ran).
		if got := loggerCRDNow(t, crds).Status.StoredVersions; !slices.Equal(got, []string{"v2"}) {
			t.Fatalf("status.storedVersions after the migration: %v, want [v2]", got)
		}

		// 8. v1 no longer served: v1 reads find nothing. The operator,
		// started only now (its status writes would have rewritten the
		// Loggers it touched, and the migrator had less to prove), works
		// in v2 on every Logger, the migrated ones included.
		crd = loggerCRDNow(t, crds)
		crd.Spec.Versions[0].Served = false
		if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("marking v1 not served: %v", err)
		}
		harness.Eventually(t, converge, "v1 reads to find no resource", func(ctx context.Context) (bool, string, error) {
			err := readV1(ctx)
			return apierrors.IsNotFound(err), fmt.Sprint(err), nil
		})
		w.Start(t, stage.Args...)
		for i, name := range names {
			waitEnv(t, w, name, fmt.Sprint(i+2))
		}
		if _, err := v2.Create(ctx, newV2Logger("after-v1", "3s"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitEnv(t, w, "after-v1", "3")

		// 9. And v1 can leave the CRD.
		crd = loggerCRDNow(t, crds)
		crd.Spec.Versions = crd.Spec.Versions[1:]
		if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("removing v1 from spec.versions after the migration: %v", err)
		}
	})
}

// expectStored reads each Logger's key from etcd and checks the apiVersion
// it is stored in.
func expectStored(t *testing.T, ns string, names []string, apiVersion string) {
	t.Helper()
	stored := etcd.Get(context.Background(), t, "/registry/example.com/loggers/"+ns+"/")
	for _, name := range names {
		key := "/registry/example.com/loggers/" + ns + "/" + name
		b, ok := stored[key]
		if !ok {
			t.Fatalf("etcd has no key %s (keys: %v)", key, keys(stored))
		}
		var o struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if o.APIVersion != apiVersion {
			t.Errorf("%s is stored as %s, want %s", key, o.APIVersion, apiVersion)
		}
	}
	t.Logf("etcd: %d Loggers in %s stored as %s", len(names), ns, apiVersion)
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// withConverter points the CRD's conversion at dead, a port nobody serves,
// while body runs, then back at the package's converter. The API server
// takes a CRD's new conversion settings a moment after the update: read,
// which must convert, is tried until it fails, then again after the
// change back until it works.
func withConverter(t *testing.T, w *harness.World, dead *envtest.WebhookInstallOptions, what string, read func(context.Context) error, body func()) {
	t.Helper()
	if err := installCRDs(w.C.Config, dead); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, converge, what+" to fail with no webhook", func(ctx context.Context) (bool, string, error) {
		err := read(ctx)
		return err != nil && strings.Contains(err.Error(), "conversion webhook for example.com/"), fmt.Sprint(err), nil
	})
	body()
	if err := installCRDs(w.C.Config, packageConverter); err != nil {
		t.Fatal(err)
	}
	harness.Eventually(t, converge, what+" to work again", func(ctx context.Context) (bool, string, error) {
		err := read(ctx)
		return err == nil, fmt.Sprint(err), nil
	})
}

// migrate runs a StorageVersionMigration of the Loggers to its Succeeded
// condition. The controller rewrites the objects older than a checkpoint,
// the resourceVersion it records in status, and starts only once the
// garbage collector's cache of Loggers has seen that resourceVersion: on a
// Logger's watch event, or a watch bookmark, about once a minute. A Logger
// written after the checkpoint, named written, is such an event (and needs
// no migrating: it is written as v2).
func migrate(t *testing.T, w *harness.World, written string) {
	t.Helper()
	ctx := context.Background()
	svms := w.C.Kube.StoragemigrationV1beta1().StorageVersionMigrations()
	svm, err := svms.Create(ctx, &svmv1beta1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "loggers-"},
		Spec:       svmv1beta1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: "example.com", Resource: "loggers"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a StorageVersionMigration: %v", err)
	}
	t.Cleanup(func() { _ = svms.Delete(context.Background(), svm.Name, metav1.DeleteOptions{}) })
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
	if _, err := w.C.Dynamic.Resource(loggerV2).Namespace(w.NS).Create(ctx, newV2Logger(written, "5s"), metav1.CreateOptions{}); err != nil {
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
}

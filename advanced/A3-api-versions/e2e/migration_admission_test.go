package e2e

import (
	"context"
	"maps"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/admission"
)

// TestMigrationThroughAdmission: a StorageVersionMigration's writes pass
// through admission like any other UPDATE. With A3's webhooks in force, a
// Logger written before its namespace had a team label, and so without one,
// keeps its labels across the migration: rewriting an object in the storage
// version must not edit it.
func TestMigrationThroughAdmission(t *testing.T) {
	withCluster(t, "the migration with the admission webhooks in force", func(t *testing.T, cfg *envconf.Config) {
		w := harness.NewWorld(t, cfg, "a3-migrate-adm", modulePackage)
		ctx := context.Background()
		const name = "unlabelled"
		w.Create(t, loggerGVR, harness.NewLogger(name, name, 2, 1))
		wh := installWebhook(t, w.C, w.NS, admissionregistrationv1.Fail)
		w.Start(t, append(append([]string{}, stage.Args[:2]...), wh.args...)...)
		setNamespaceLabels(t, w.C, w.NS, map[string]string{admission.TeamLabel: "platform"})

		get := func() *unstructured.Unstructured {
			l, err := w.C.Dynamic.Resource(loggerV2).Namespace(w.NS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		labels := func() map[string]string { return get().GetLabels() }
		// The operator's status write comes first: a Logger written after
		// the migration's checkpoint is not the migrator's to rewrite.
		harness.Eventually(t, converge, "the operator's status on "+name, func(context.Context) (bool, string, error) {
			state, _, _ := unstructured.NestedString(get().Object, "status", "state")
			return state == "Available", "state " + state, nil
		})
		rv := get().GetResourceVersion()
		before := labels()
		if _, ok := before[admission.TeamLabel]; ok {
			t.Fatalf("Logger %s has labels %v before the migration; want no team label", name, before)
		}
		migrate(t, w, "written-during-migration")
		after := get()
		var managers []string
		for _, m := range after.GetManagedFields() {
			managers = append(managers, m.Manager+" "+string(m.Operation))
		}
		t.Logf("Logger %s: resourceVersion %s before the migration, %s after; managers %v", name, rv, after.GetResourceVersion(), managers)
		if after := after.GetLabels(); !maps.Equal(before, after) {
			t.Errorf("the migration changed Logger %s's labels: %v, then %v; a storage migration must not edit what it rewrites", name, before, after)
		}
	})
}

package e2e

import (
	"context"
	"maps"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

		labels := func() map[string]string {
			l, err := w.C.Dynamic.Resource(loggerV2).Namespace(w.NS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return l.GetLabels()
		}
		before := labels()
		if _, ok := before[admission.TeamLabel]; ok {
			t.Fatalf("Logger %s has labels %v before the migration; want no team label", name, before)
		}
		migrate(t, w, "written-during-migration")
		if after := labels(); !maps.Equal(before, after) {
			t.Errorf("the migration changed Logger %s's labels: %v, then %v; a storage migration must not edit what it rewrites", name, before, after)
		}
	})
}

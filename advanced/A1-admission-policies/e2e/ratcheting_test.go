package e2e

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operator-flow/operator-flow/harness"
)

// TestRatcheting tightens a bound of the CRD over a stored object that
// breaks it: stage 06's Logger CRD takes a timeInterval of 1 and up, this
// module's of 5 and up. With validation ratcheting, an update that leaves
// the broken field as it was passes; a new object, or an update that
// changes the field, must keep the new bound.
func TestRatcheting(t *testing.T) {
	c := clients(t)
	ctx := context.Background()
	ns := c.Namespace(t, "a1-ratcheting")
	l := c.Dynamic.Resource(loggers).Namespace(ns)
	short := harness.NewLogger("short", "short", 2, 1)

	// The CRD is the cluster's: whatever happens below, this module's CRD
	// is back when the test ends.
	t.Cleanup(func() {
		if err := c.InstallCRDs(context.Background(), harness.RepoPath(module, "config", "crd")); err != nil {
			t.Errorf("putting this module's CRDs back: %v", err)
		}
	})
	must(t, c.InstallCRDs(ctx, harness.RepoPath("06-status-and-owners", "config", "crd")))
	harness.Eventually(t, settle, "stage 06's CRD to admit a timeInterval of 2", func(ctx context.Context) (bool, string, error) {
		_, err := dryRun(ctx, c.Dynamic, ns, short)
		return err == nil, errString(err), nil
	})
	if _, err := l.Create(ctx, short, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	must(t, c.InstallCRDs(ctx, harness.RepoPath(module, "config", "crd")))
	waitRefused(t, c, ns, harness.NewLogger("new", "new", 2, 1), "spec.timeInterval", "greater than or equal to 5")

	patch := func(p string) error {
		_, err := l.Patch(ctx, "short", types.MergePatchType, []byte(p), metav1.PatchOptions{})
		return err
	}
	if err := patch(`{"spec":{"replicas":2}}`); err != nil {
		t.Errorf("an update of replicas, timeInterval left at 2: %v; want it to pass (ratcheting)", err)
	}
	if err := patch(`{"metadata":{"labels":{"edited":"yes"}}}`); err != nil {
		t.Errorf("an update of a label: %v; want it to pass (ratcheting)", err)
	}
	err := patch(`{"spec":{"timeInterval":3}}`)
	if err == nil || !strings.Contains(err.Error(), "spec.timeInterval") {
		t.Errorf("an update of timeInterval from 2 to 3: %v; want it refused, naming spec.timeInterval", err)
	}
	if err := patch(`{"spec":{"timeInterval":5}}`); err != nil {
		t.Errorf("an update of timeInterval from 2 to 5: %v; want it to pass", err)
	}
}

func errString(err error) string {
	if err == nil {
		return "admitted"
	}
	return err.Error()
}

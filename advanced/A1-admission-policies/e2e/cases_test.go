package e2e

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/admission"
)

// TestTheRule runs every case of the rule (harness/admission) through the
// two policies: the ValidatingAdmissionPolicy's verdict and message, and the
// label the MutatingAdmissionPolicy leaves on the stored Logger.
func TestTheRule(t *testing.T) {
	c := clients(t)
	scope := rand.String(5)
	install(t, c, "logger-replicas.yaml", scope, nil)
	install(t, c, "logger-team.yaml", scope, nil)
	sentinels(t, c, scope)
	for _, tc := range admission.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			got, err := write(t, c, scope, tc)
			switch {
			case tc.Allowed && err != nil:
				t.Fatalf("refused: %v", err)
			case !tc.Allowed && err == nil:
				t.Fatalf("admitted with spec.replicas %d, want refused", tc.Replicas)
			case !tc.Allowed:
				if !containsAll(err.Error(), tc.Says) {
					t.Errorf("refused with %q, want a message with %q", err, tc.Says)
				}
				t.Logf("refused: %v", err)
				return
			}
			if team := got.GetLabels()[admission.TeamLabel]; team != tc.Team {
				t.Errorf("the stored Logger's %s label is %q, want %q", admission.TeamLabel, team, tc.Team)
			}
		})
	}
}

// write makes the case's write in a namespace of its own: a create, or for
// an update, a Logger created before the namespace got its labels (as one
// stored before a cap was lowered), then changed.
func write(t *testing.T, c *harness.Clients, scope string, tc admission.Case) (*unstructured.Unstructured, error) {
	t.Helper()
	ctx := context.Background()
	if tc.OldReplicas == nil {
		ns := namespace(t, c, scope, nil)
		waitSeen(t, c, ns, tc.NamespaceLabels)
		return c.Dynamic.Resource(loggers).Namespace(ns).Create(ctx, logger("written", tc.Replicas, tc.Labels), metav1.CreateOptions{})
	}
	ns := namespace(t, c, scope, nil)
	l := c.Dynamic.Resource(loggers).Namespace(ns)
	if _, err := l.Create(ctx, logger("written", *tc.OldReplicas, nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Logger to update: %v", err)
	}
	waitSeen(t, c, ns, tc.NamespaceLabels)
	old, err := l.Get(ctx, "written", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	must(t, unstructured.SetNestedField(old.Object, int64(tc.Replicas), "spec", "replicas"))
	if tc.Labels != nil {
		old.SetLabels(tc.Labels)
	}
	return l.Update(ctx, old, metav1.UpdateOptions{})
}

// TestStatusWritesAreNotChecked shows the policies' rules at work: they
// list loggers, not loggers/status. Where a cap that is not a whole number
// refuses every write to a Logger, a write to its status still passes, as
// the operator's status writes must.
func TestStatusWritesAreNotChecked(t *testing.T) {
	c := clients(t)
	ctx := context.Background()
	scope := rand.String(5)
	install(t, c, "logger-replicas.yaml", scope, nil)
	sentinels(t, c, scope)
	ns := namespace(t, c, scope, nil)
	l := c.Dynamic.Resource(loggers).Namespace(ns)
	if _, err := l.Create(ctx, logger("stored", 1, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSeen(t, c, ns, map[string]string{admission.MaxReplicasLabel: "three"})

	stored, err := l.Get(ctx, "stored", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored.SetLabels(map[string]string{"changed": "yes"})
	if _, err := l.Update(ctx, stored, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "whole number") {
		t.Fatalf("an update of the Logger: %v; want it refused, the cap is not a whole number", err)
	}
	stored, err = l.Get(ctx, "stored", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	must(t, unstructured.SetNestedField(stored.Object, "Unavailable", "status", "state"))
	if _, err := l.UpdateStatus(ctx, stored, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("a write to loggers/status was refused: %v; the policy's rules list loggers only", err)
	}
}

package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/admission"
)

// modulePackage is the operator the tests build (OPERATOR_PKG overrides it,
// for a lab's check).
var modulePackage = harness.OperatorPackage(stage.Package)

// runCase makes the write of case tc in namespace ns, as a Logger named
// name, and returns what admission made of it. An update's Logger is stored
// first, before the namespace gets its cap (a Logger stored before the cap
// was lowered). The namespace's labels are set, and waited for, before each
// write.
func runCase(t *testing.T, c *harness.Clients, ns, name string, tc admission.Case) outcome {
	t.Helper()
	ctx := context.Background()
	loggers := c.Dynamic.Resource(loggerGVR).Namespace(ns)
	newLogger := func(replicas int32) *unstructured.Unstructured {
		u := harness.NewLogger(name, name, 5, int64(replicas))
		if len(tc.Labels) > 0 {
			u.SetLabels(maps.Clone(tc.Labels))
		}
		return u
	}
	var u *unstructured.Unstructured
	var err error
	if tc.OldReplicas != nil {
		before := maps.Clone(tc.NamespaceLabels)
		delete(before, admission.MaxReplicasLabel)
		setNamespaceLabels(t, c, ns, before)
		if _, err := loggers.Create(ctx, newLogger(*tc.OldReplicas), metav1.CreateOptions{}); err != nil {
			t.Fatalf("storing the Logger before the cap: %v", err)
		}
		setNamespaceLabels(t, c, ns, tc.NamespaceLabels)
		// A merge patch, which carries no resourceVersion: the operator
		// writes the Logger's status meanwhile.
		patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, tc.Replicas)
		u, err = loggers.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		o, rerr := result(u, err)
		if rerr != nil {
			t.Fatalf("updating Logger %s/%s: %v", ns, name, rerr)
		}
		return stored(t, c, ns, name, o)
	}
	setNamespaceLabels(t, c, ns, tc.NamespaceLabels)
	u, err = loggers.Create(ctx, newLogger(tc.Replicas), metav1.CreateOptions{})
	o, rerr := result(u, err)
	if rerr != nil {
		t.Fatalf("creating Logger %s/%s: %v", ns, name, rerr)
	}
	return stored(t, c, ns, name, o)
}

// stored reads an allowed write's team label back from the API server.
func stored(t *testing.T, c *harness.Clients, ns, name string, o outcome) outcome {
	t.Helper()
	if !o.allowed {
		return o
	}
	u, err := c.Dynamic.Resource(loggerGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o.team = u.GetLabels()[admission.TeamLabel]
	return o
}

// checkCase compares an outcome with the table.
func checkCase(t *testing.T, tc admission.Case, o outcome) {
	t.Helper()
	if o.allowed != tc.Allowed {
		t.Errorf("want allowed=%v, got %s", tc.Allowed, o)
		return
	}
	if !o.allowed {
		for _, part := range tc.Says {
			if !strings.Contains(o.message, part) {
				t.Errorf("the refusal does not say %q: %s", part, o.message)
			}
		}
		return
	}
	if o.team != tc.Team {
		t.Errorf("want the stored team label %q, got %q", tc.Team, o.team)
	}
}

// TestAdmissionCases runs every case of harness/admission through the
// webhook, served by the operator: the verdict, the parts of the refusal,
// the team label stored. A refusal names the field the way the API server
// words field errors, and comes from the validating webhook. Every request
// is one line of the operator's log, and the operator's own status writes
// (loggers/status, which the rules leave out) are not among them.
func TestAdmissionCases(t *testing.T) {
	withCluster(t, "the webhook enforces every case", func(t *testing.T, cfg *envconf.Config) {
		w := harness.NewWorld(t, cfg, "a3-cases", modulePackage)
		wh := installWebhook(t, w.C, w.NS, admissionregistrationv1.Fail)
		op := w.Start(t, append(append([]string{}, stage.Args[:2]...), wh.args...)...)
		waitAdmissionActive(t, w.C, w.NS)
		for i, tc := range admission.Cases {
			name := fmt.Sprintf("case-%d", i)
			t.Run(tc.Name, func(t *testing.T) {
				o := runCase(t, w.C, w.NS, name, tc)
				checkCase(t, tc, o)
				if o.allowed {
					return
				}
				for _, part := range []string{`admission webhook "vlogger.example.com" denied the request`, `Logger.example.com "` + name + `" is invalid`, "spec.replicas: Invalid value: "} {
					if !strings.Contains(o.message, part) {
						t.Errorf("the refusal does not say %q: %s", part, o.message)
					}
				}
				line := op.WaitForLog(converge, "admission refused", `"name": "`+name+`"`, `"webhook": "validate"`)
				t.Logf("the operator's log: %s", line)
			})
		}

		t.Run("status writes do not go through the webhook", func(t *testing.T) {
			// case-0 was created once (one mutate and one validate
			// request) and the operator has since written its status.
			const name = "case-0"
			harness.Eventually(t, converge, "Logger "+name+" to have a status", func(ctx context.Context) (bool, string, error) {
				u, err := w.Get(ctx, loggerGVR, name)
				if err != nil || u == nil {
					return false, "", err
				}
				state, _, _ := unstructured.NestedString(u.Object, "status", "state")
				return state != "", "state " + state, nil
			})
			if n := op.CountLog("admission ", `"name": "`+name+`"`); n != 2 {
				t.Errorf("want 2 admission lines about %s (its create: mutate, validate), got %d:\n%s", name, n, op.Log())
			}
		})
	})
}

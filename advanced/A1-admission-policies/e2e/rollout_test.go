package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/admission"
	"github.com/operator-flow/operator-flow/trace"
)

// warnings keeps the warnings the API server sends back (the Warning
// header); client-go hands each to the config's WarningHandler.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, message)
}

func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.seen, "\n")
}

// TestWarnAndAuditThenDeny rolls the replicas cap out as a team would: the
// binding first warns and audits, and lets the write through; then it
// denies. What was stored meanwhile stays, and can still be edited.
func TestWarnAndAuditThenDeny(t *testing.T) {
	c := clients(t)
	ctx := context.Background()
	scope := rand.String(5)
	names := install(t, c, "logger-replicas.yaml", scope, func(o *unstructured.Unstructured) {
		if o.GetKind() == "ValidatingAdmissionPolicyBinding" {
			must(t, unstructured.SetNestedStringSlice(o.Object, []string{"Warn", "Audit"}, "spec", "validationActions"))
		}
	})
	policy := names["logger-replicas"]
	sentinels(t, c, scope)
	ns := namespace(t, c, scope, nil)
	waitSeen(t, c, ns, map[string]string{admission.MaxReplicasLabel: "3"})

	w := &warnings{}
	cfg := rest.CopyConfig(c.Config)
	cfg.WarningHandler = w
	warned, err := dynamic.NewForConfig(cfg)
	must(t, err)

	t.Run("Warn: the write passes, and the client is told", func(t *testing.T) {
		audit, err := trace.AuditLog(harness.RepoPath(), harness.Env().EnvConf().KubeconfigFile())
		must(t, err)
		from, err := audit.Size()
		must(t, err)
		if _, err := warned.Resource(loggers).Namespace(ns).Create(ctx, logger("big", 4, nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("the create was refused under Warn and Audit: %v", err)
		}
		want := "Validation failed for ValidatingAdmissionPolicy '" + policy + "' with binding '" + policy + "': spec.replicas: 4 is over this namespace's cap of 3"
		if !strings.Contains(w.all(), want) {
			t.Errorf("warnings:\n%s\nwant one that reads %q", w.all(), want)
		}

		t.Run("Audit: the request's audit event carries the verdict", func(t *testing.T) {
			var event auditv1.Event
			harness.Eventually(t, settle, "the create's audit event", func(context.Context) (bool, string, error) {
				b, err := audit.ReadFrom(from)
				if err != nil {
					return false, "", err
				}
				for _, e := range trace.ParseAudit(b) {
					if e.Verb == "create" && e.ObjectRef.Resource == "loggers" && e.ObjectRef.Namespace == ns &&
						e.ObjectRef.Name == "big" && e.Stage == auditv1.StageResponseComplete {
						event = e
						return true, "", nil
					}
				}
				return false, "no audit event of the create yet", nil
			})
			if got, want := event.Annotations[policy+"/replicas"], "4 (cap 3)"; got != want {
				t.Errorf("annotation %s/replicas = %q, want %q", policy, got, want)
			}
			failure := event.Annotations["validation.policy.admission.k8s.io/validation_failure"]
			if !strings.Contains(failure, "spec.replicas: 4 is over this namespace's cap of 3") || !strings.Contains(failure, policy) {
				t.Errorf("annotation validation.policy.admission.k8s.io/validation_failure = %q, want the policy and its message", failure)
			}
			t.Logf("audit annotations: %v", event.Annotations)
		})
	})

	t.Run("Deny: the same write is refused; the stored Logger can still be edited", func(t *testing.T) {
		r, err := c.Resource(bindingKind, "")
		must(t, err)
		patch := []byte(`{"spec":{"validationActions":["Deny"]}}`)
		if _, err := r.Patch(ctx, policy, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRefused(t, c, ns, logger("big2", 4, nil), "spec.replicas: 4", "cap of 3")
		l := c.Dynamic.Resource(loggers).Namespace(ns)
		big, err := l.Get(ctx, "big", metav1.GetOptions{})
		must(t, err)
		big.SetLabels(map[string]string{"edited": "yes"})
		if _, err := l.Update(ctx, big, metav1.UpdateOptions{}); err != nil {
			t.Errorf("an edit of the Logger stored under Warn, replicas unchanged: %v; want it to pass", err)
		}
	})
}

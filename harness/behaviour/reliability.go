package behaviour

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// Reliability runs the failure scenarios of docs/reliability.md against a stage: the
// operator killed mid-batch, the API server and etcd restarted under it, a
// poison object among healthy ones, and a conflict storm. scale is how many
// tickets and Loggers the batch scenario creates (30 in `make test`, 300 in
// `make chaos`). The restart scenarios stop the cluster's own processes, so
// the calling package must use harness.MainPrivate.
func Reliability(t *testing.T, s Stage, scale int) {
	t.Helper()
	harness.Env().Test(t,
		killedMidBatch(s, scale),
		restarted(s, "kube-apiserver"),
		restarted(s, "etcd"),
		poisonObject(s),
		conflictStorm(s),
	)
}

// isWrite: the HTTP methods that change objects.
func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// restarted: a control-plane process is stopped and started again under a
// running operator. The operator must not need a restart of its own: its
// watches fail, it reconnects (client-go's reflector backs off up to about
// 30 s between attempts), and objects created afterwards converge.
func restarted(s Stage, component string) features.Feature {
	var f *fixture
	return features.New(component+" restarted under a running operator").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "restart")
			f.start(t)
			f.Create(t, ticketGVR, newTicket("before", "Oslo", "Bergen", 1))
			f.waitTicketBooked(t, "before", "Oslo", "Bergen", 1)
			return ctx
		}).
		Assess("the operator reconnects by itself and serves new objects", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			op := f.op
			harness.RestartComponent(t, component, nil)
			f.waitAPIServerReady(t, component)
			f.Create(t, ticketGVR, newTicket("after", "Oslo", "Bergen", 2))
			f.Create(t, loggerGVR, newLogger("after", "after-restart", 5, 1))
			f.waitTicketBooked(t, "after", "Oslo", "Bergen", 2)
			f.waitAvailableAfterRestart(t, "after")
			f.waitLoggerState(t, "after", stateAvailable)
			if op.Exited() {
				t.Errorf("the operator exited when %s restarted; it must reconnect instead:\n%s", component, summary(op))
			}
			return ctx
		}).Feature()
}

// waitAPIServerReady waits for kube-apiserver's /readyz after component was
// restarted, and shows the end of that component's log if it never comes.
func (f *fixture) waitAPIServerReady(t *testing.T, component string) {
	t.Helper()
	harness.Eventually(t, converge, "the API server to answer /readyz again", func(ctx context.Context) (bool, string, error) {
		_, err := f.C.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil {
			return true, "", nil
		}
		return false, fmt.Sprintf("%v\nthe last lines of %s's log:\n%s", err, component, harness.ComponentLog(component, 15)), nil
	})
}

// waitAvailableAfterRestart waits for the cluster, not the operator, to make
// a Logger's Deployment Available after a control-plane restart. Only
// kube-controller-manager, the scheduler and kwok move a Deployment to
// Available, and their watches came back on the same reflector backoff as
// the operator's (up to 30 s between attempts, and jitter can double it).
// Waiting for that first, with room for the backoff, keeps a slow cluster
// from being blamed on the operator; the Logger's own wait that follows
// then measures the operator alone.
func (f *fixture) waitAvailableAfterRestart(t *testing.T, logger string) {
	t.Helper()
	name := deploymentName(logger)
	start := time.Now()
	harness.Eventually(t, 2*converge, "Deployment "+name+" to be Available (the cluster's controllers recovering from the restart)", func(ctx context.Context) (bool, string, error) {
		d, err := f.Deployment(ctx, name)
		if err != nil || d == nil {
			return false, "no Deployment: the operator has not created it", err
		}
		if d.Status.AvailableReplicas > 0 {
			return true, "", nil
		}
		return false, fmt.Sprintf("availableReplicas=%d; the last lines of kube-controller-manager's log:\n%s",
			d.Status.AvailableReplicas, harness.ComponentLog("kube-controller-manager", 10)), nil
	})
	t.Logf("the cluster made %s Available in %.1fs", name, time.Since(start).Seconds())
}

// poisonObject: one Logger whose Deployment the API server always refuses (a
// ValidatingAdmissionPolicy forbids its name) sits among healthy objects. The
// operator must back off on it, exponentially, and keep serving the others
// at full speed.
func poisonObject(s Stage) features.Feature {
	var (
		f      *fixture
		p      *apiProxy
		policy = "operator-flow-e2e-poison-"
	)
	poisonCreate := func(r proxiedRequest) bool {
		return r.isCreateOf("deployments") && r.status == http.StatusUnprocessableEntity
	}
	return features.New("a poison object backs off while the others converge").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "poison")
			policy += f.NS
			denyPoison(ctx, t, f, policy)
			p = newAPIProxy(t, f.C.Config)
			f.Kubeconfig = p.kubeconfig
			f.start(t)
			return ctx
		}).
		Assess("healthy objects converge while the poison Logger keeps failing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f.Create(t, loggerGVR, newLogger("poison", "never", 5, 1))
			harness.Eventually(t, converge, "the first refused create of the poison Deployment", func(context.Context) (bool, string, error) {
				n := len(p.requests(poisonCreate))
				return n > 0, fmt.Sprintf("%d refused", n), nil
			})
			for i := 0; i < 10; i++ {
				f.Create(t, ticketGVR, newTicket(fmt.Sprintf("healthy-%d", i), "Oslo", "Bergen", int64(1+i)))
			}
			f.Create(t, loggerGVR, newLogger("healthy", "healthy", 5, 1))
			start := time.Now()
			for i := 0; i < 10; i++ {
				f.waitTicketBooked(t, fmt.Sprintf("healthy-%d", i), "Oslo", "Bergen", int64(1+i))
			}
			f.waitLoggerState(t, "healthy", stateAvailable)
			t.Logf("10 tickets and a Logger converged in %v beside the poison object", time.Since(start).Round(time.Millisecond))
			return ctx
		}).
		Assess("the poison Logger's retries back off exponentially", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			harness.Eventually(t, 2*converge, "8 refused attempts", func(context.Context) (bool, string, error) {
				n := len(p.requests(poisonCreate))
				return n >= 8, fmt.Sprintf("%d refused", n), nil
			})
			attempts := p.requests(poisonCreate)
			gaps := intervals(attempts)
			t.Logf("gaps between the poison Deployment's refused creates: %s", formatDurations(gaps))
			// Backoff doubles each wait (5 ms, 10, 20, ...), so with 8 attempts
			// the last three waits are 16 times the first three, though each
			// gap also holds one sync's own time, which shrinks the ratio. The
			// first ones also take longer because their syncs run while the
			// healthy objects above load the API server and the operator's
			// client (seen: 15, 82, 88 ms, then 134, 224, 348), so the check
			// asks for twice: a hot loop's waits do not grow at all.
			if early, late := median3(gaps[:3]), median3(gaps[len(gaps)-3:]); late < 2*early {
				t.Errorf("the waits do not grow (the first three's median %v, the last three's %v): a hot loop, not backoff", early, late)
			}
			// A hot loop sends hundreds of requests a second; backoff spends
			// a handful in the time these 8 took.
			if rate := float64(len(attempts)) / attempts[len(attempts)-1].start.Sub(attempts[0].start).Seconds(); rate > 20 {
				t.Errorf("%.0f attempts per second on the poison object: that is a hot loop", rate)
			}
			return ctx
		}).
		Assess("the poison Logger says it is Degraded", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			if !s.Conditions {
				return ctx
			}
			harness.Eventually(t, converge, "Logger poison to have condition Degraded=True", func(ctx context.Context) (bool, string, error) {
				u, err := f.Get(ctx, loggerGVR, "poison")
				if err != nil || u == nil {
					return false, "no Logger", err
				}
				conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				for _, c := range conds {
					m, _ := c.(map[string]any)
					if m["type"] == "Degraded" {
						return m["status"] == "True", fmt.Sprintf("Degraded=%v (%v): %v", m["status"], m["reason"], m["message"]), nil
					}
				}
				return false, "no Degraded condition", nil
			})
			return ctx
		}).Feature()
}

// denyPoison installs a ValidatingAdmissionPolicy that refuses the Deployment
// named logger-poison in the fixture's namespace, and removes it afterwards.
func denyPoison(ctx context.Context, t *testing.T, f *fixture, name string) {
	t.Helper()
	adm := f.C.Kube.AdmissionregistrationV1()
	fail := admissionregistrationv1.Deny
	_, err := adm.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptrTo(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `object.metadata.name != "logger-poison"`,
				Message:    "logger-poison is forbidden by the e2e poison-object test",
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the ValidatingAdmissionPolicy: %v", err)
	}
	_, err = adm.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{fail},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": f.NS}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the ValidatingAdmissionPolicyBinding: %v", err)
	}
	t.Cleanup(func() {
		if err := adm.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the ValidatingAdmissionPolicyBinding: %v", err)
		}
		if err := adm.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the ValidatingAdmissionPolicy: %v", err)
		}
	})
	// Admission policies take effect asynchronously: wait until a dry-run
	// create of the forbidden Deployment is refused.
	harness.Eventually(t, converge, "the admission policy to take effect", func(ctx context.Context) (bool, string, error) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "logger-poison"}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		}}
		d.Spec.Template.Labels = map[string]string{"a": "b"}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
		_, err := f.C.Kube.AppsV1().Deployments(f.NS).Create(ctx, d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "forbidden by the e2e"), fmt.Sprint(err), nil
	})
}

// conflictStorm: a second writer keeps changing one Logger's labels and spec
// while the operator reconciles it. The Logger is created as the storm
// begins, so the operator writes its status during the storm, and the proxy
// holds each of its writes to the Logger for stormWriteDelay, so that the
// storm's patches land in between. A write that carries the resourceVersion
// the operator read (the Update of stages 04 and 05, the status patch of
// stage 06) is then answered 409 Conflict; the operator must send it again
// until it succeeds, converge to the writer's last spec, and not spend an
// unbounded number of requests. A stage whose writes cannot conflict
// (StaleWritesConflict false) proves convergence and the budget only.
func conflictStorm(s Stage) features.Feature {
	var (
		f *fixture
		p *apiProxy
	)
	const writes, maxWrites = 40, 400
	toStorm := func(method, path string) bool {
		return isWrite(method) && (strings.HasSuffix(path, "/loggers/storm") || strings.HasSuffix(path, "/loggers/storm/status"))
	}
	assess := "the operator converges to the last spec within a bounded number of requests (its writes cannot conflict)"
	if s.StaleWritesConflict {
		assess = "the operator is answered 409, sends each refused write again, and converges to the last spec within a bounded number of requests"
	}
	return features.New("a conflict storm on one Logger").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "storm")
			p = newAPIProxy(t, operatorIdentity(t, f))
			p.slow = func(r *http.Request) bool { return toStorm(r.Method, r.URL.Path) }
			p.slowBy = stormWriteDelay
			f.Kubeconfig = p.kubeconfig
			f.start(t)
			return ctx
		}).
		Assess(assess, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			before := time.Now()
			conflicted := func(r proxiedRequest) bool { return r.status == http.StatusConflict && !r.start.Before(before) }
			f.Create(t, loggerGVR, newLogger("storm", "storm", 5, 1))
			// At least `writes` patches; for a stage whose writes can
			// conflict, more until the operator has met its first 409.
			i := 0
			for i < maxWrites && (i < writes || (s.StaleWritesConflict && len(p.requests(conflicted)) == 0)) {
				i++
				patch := fmt.Sprintf(`{"metadata":{"labels":{"storm":"%d"}},"spec":{"replicas":%d,"timeInterval":%d}}`, i, 1+i%3, 5+i)
				if _, err := f.C.Dynamic.Resource(loggerGVR).Namespace(f.NS).Patch(ctx, "storm", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					t.Fatalf("storm write %d: %v", i, err)
				}
			}
			want := wantDeployment{logger: "storm", printed: "storm", interval: int64(5 + i), replicas: int32(1 + i%3), image: defaultImage}
			f.waitDeployment(t, deploymentName("storm"), func(d *appsv1.Deployment) (bool, string) {
				p := want.problems(d)
				return len(p) == 0, strings.Join(p, "; ")
			})
			f.waitLoggerState(t, "storm", stateAvailable)
			all := p.requests(func(r proxiedRequest) bool { return !r.start.Before(before) })
			conflicts := p.requests(conflicted)
			t.Logf("%d storm writes cost the operator %d requests, %d of them answered 409 Conflict", i, len(all), len(conflicts))
			if s.StaleWritesConflict && len(conflicts) == 0 {
				t.Errorf("%d storm writes landed while the operator's writes to the Logger were held %v, and none was answered 409 Conflict: the operator does not write with the resourceVersion it read", i, stormWriteDelay)
			}
			// Every 409 is followed by the same write, accepted.
			for _, c := range conflicts {
				retried := slices.ContainsFunc(all, func(r proxiedRequest) bool {
					return r.start.After(c.start) && r.method == c.method && r.path == c.path && r.status >= 200 && r.status < 300
				})
				if !retried {
					t.Errorf("%s %s was answered 409 Conflict at %s and never sent again successfully", c.method, c.path, c.start.Format("15:04:05.000"))
				}
			}
			// Each storm write may cost a reconcile: a read-free Deployment
			// update and a status write, plus retries of conflicts. Ten per
			// write is generous; a hot loop on conflicts spends thousands.
			if len(all) > 10*i {
				t.Errorf("the operator spent %d requests on %d writes; want at most %d", len(all), i, 10*i)
			}
			return ctx
		}).Feature()
}

// stormWriteDelay is how long the proxy holds each of the operator's writes
// to the storm's Logger: long enough for several storm patches to land in
// between, which makes the write's resourceVersion stale.
const stormWriteDelay = 300 * time.Millisecond

func ptrTo[T any](v T) *T { return &v }

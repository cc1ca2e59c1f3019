package behaviour

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
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

// Reliability runs the failure scenarios of issue 7 against a stage: the
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

// killedMidBatch: scale tickets and scale Loggers are created at once, and the
// operator is SIGKILLed three times while they converge (at a quarter, half
// and three quarters of the way), each time replaced by a fresh process. A
// crash loses whatever was in memory (queues, caches), so this proves that
// everything the operator needs is in the cluster, and that redoing work is
// harmless: in the end each Logger has exactly one Deployment.
func killedMidBatch(s Stage, scale int) features.Feature {
	var f *fixture
	return features.New(fmt.Sprintf("killed 3 times while %d tickets and %d Loggers converge", scale, scale)).
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "kill")
			f.start(t)
			return ctx
		}).
		Assess("every object converges, and every Logger has exactly one Deployment", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			var wg sync.WaitGroup
			for i := 0; i < scale; i++ {
				wg.Add(2)
				go func() {
					defer wg.Done()
					f.create(t, ticketGVR, newTicket(fmt.Sprintf("t-%03d", i), "Oslo", "Bergen", int64(1+i%10)))
				}()
				go func() { defer wg.Done(); f.create(t, loggerGVR, newLogger(fmt.Sprintf("l-%03d", i), "batch", 5, 1)) }()
			}
			wg.Wait()
			for k := 1; k <= 3; k++ {
				target := k * 2 * scale / 4
				harness.Eventually(t, 2*converge, fmt.Sprintf("%d of %d objects converged", target, 2*scale), func(ctx context.Context) (bool, string, error) {
					done, err := f.progress(ctx, scale)
					return done >= target, fmt.Sprintf("%d converged", done), err
				})
				f.op.Kill()
				t.Logf("SIGKILLed the operator after %d of %d objects converged; starting a new one", target, 2*scale)
				f.start(t)
			}
			harness.Eventually(t, 3*converge, "every object converged", func(ctx context.Context) (bool, string, error) {
				done, err := f.progress(ctx, scale)
				return done == 2*scale, fmt.Sprintf("%d of %d converged", done, 2*scale), err
			})
			harness.Eventually(t, converge, "every Logger Available", func(ctx context.Context) (bool, string, error) {
				avail, err := f.countLoggers(ctx, stateAvailable)
				return avail == scale, fmt.Sprintf("%d of %d Available", avail, scale), err
			})
			deps, err := f.c.Kube.AppsV1().Deployments(f.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=logger"})
			if err != nil {
				t.Fatal(err)
			}
			perLogger := map[string]int{}
			for _, d := range deps.Items {
				perLogger[d.Labels["app.kubernetes.io/instance"]]++
			}
			if len(deps.Items) != scale || len(perLogger) != scale {
				t.Errorf("%d Deployments for %d Loggers (%d distinct), want exactly one each", len(deps.Items), scale, len(perLogger))
			}
			return ctx
		}).Feature()
}

// progress counts tickets booked with the message their spec asks for, plus
// Loggers whose Deployment exists with the replicas and interval they ask for.
func (f *fixture) progress(ctx context.Context, scale int) (int, error) {
	done := 0
	tickets, err := f.c.Dynamic.Resource(ticketGVR).Namespace(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	for _, u := range tickets.Items {
		n, _, _ := unstructured.NestedInt64(u.Object, "spec", "number")
		if str(&u, "status", "phase") == phaseBooked && str(&u, "status", "message") == bookingMessage("Oslo", "Bergen", n) {
			done++
		}
	}
	deps, err := f.c.Kube.AppsV1().Deployments(f.ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=logger"})
	if err != nil {
		return 0, err
	}
	for i := range deps.Items {
		want := wantDeployment{logger: deps.Items[i].Labels["app.kubernetes.io/instance"], printed: "batch", interval: 5, replicas: 1, image: defaultImage}
		if len(want.problems(&deps.Items[i])) == 0 {
			done++
		}
	}
	return done, nil
}

func (f *fixture) countLoggers(ctx context.Context, state string) (int, error) {
	loggers, err := f.c.Dynamic.Resource(loggerGVR).Namespace(f.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range loggers.Items {
		if str(&loggers.Items[i], "status", "state") == state {
			n++
		}
	}
	return n, nil
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
			f.create(t, ticketGVR, newTicket("before", "Oslo", "Bergen", 1))
			f.waitTicketBooked(t, "before", "Oslo", "Bergen", 1)
			return ctx
		}).
		Assess("the operator reconnects by itself and serves new objects", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			op := f.op
			harness.RestartComponent(t, component, nil)
			f.waitAPIServerReady(t, component)
			f.create(t, ticketGVR, newTicket("after", "Oslo", "Bergen", 2))
			f.create(t, loggerGVR, newLogger("after", "after-restart", 5, 1))
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
		_, err := f.c.Kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
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
		d, err := f.deployment(ctx, name)
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
			policy += f.ns
			denyPoison(ctx, t, f, policy)
			p = newAPIProxy(t, f.c.Config)
			f.kubeconfig = p.kubeconfig
			f.start(t)
			return ctx
		}).
		Assess("healthy objects converge while the poison Logger keeps failing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f.create(t, loggerGVR, newLogger("poison", "never", 5, 1))
			harness.Eventually(t, converge, "the first refused create of the poison Deployment", func(context.Context) (bool, string, error) {
				n := len(p.requests(poisonCreate))
				return n > 0, fmt.Sprintf("%d refused", n), nil
			})
			for i := 0; i < 10; i++ {
				f.create(t, ticketGVR, newTicket(fmt.Sprintf("healthy-%d", i), "Oslo", "Bergen", int64(1+i)))
			}
			f.create(t, loggerGVR, newLogger("healthy", "healthy", 5, 1))
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
			if early, late := mean(gaps[:3]), mean(gaps[len(gaps)-3:]); late < 4*early {
				t.Errorf("the waits do not grow (first three average %v, last three %v): a hot loop, not backoff", early, late)
			}
			// A hot loop sends hundreds of requests a second; backoff spends
			// a handful in the time these 8 took.
			if rate := float64(len(attempts)) / attempts[len(attempts)-1].start.Sub(attempts[0].start).Seconds(); rate > 20 {
				t.Errorf("%.0f attempts per second on the poison object: that is a hot loop", rate)
			}
			return ctx
		}).Feature()
}

// denyPoison installs a ValidatingAdmissionPolicy that refuses the Deployment
// named logger-poison in the fixture's namespace, and removes it afterwards.
func denyPoison(ctx context.Context, t *testing.T, f *fixture, name string) {
	t.Helper()
	adm := f.c.Kube.AdmissionregistrationV1()
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
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": f.ns}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the ValidatingAdmissionPolicyBinding: %v", err)
	}
	t.Cleanup(func() {
		adm.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		adm.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// Admission policies take effect asynchronously: wait until a dry-run
	// create of the forbidden Deployment is refused.
	harness.Eventually(t, converge, "the admission policy to take effect", func(ctx context.Context) (bool, string, error) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "logger-poison"}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		}}
		d.Spec.Template.Labels = map[string]string{"a": "b"}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox"}}
		_, err := f.c.Kube.AppsV1().Deployments(f.ns).Create(ctx, d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "forbidden by the e2e"), fmt.Sprint(err), nil
	})
}

// conflictStorm: a second writer keeps changing one Logger's labels and spec
// while the operator reconciles it. Every write the operator makes to the
// Logger may hit 409 Conflict (its copy is stale); it must retry, converge to
// the writer's last spec, and not spend an unbounded number of requests.
func conflictStorm(s Stage) features.Feature {
	var (
		f *fixture
		p *apiProxy
	)
	const writes = 40
	return features.New("a conflict storm on one Logger").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "storm")
			p = newAPIProxy(t, f.c.Config)
			f.kubeconfig = p.kubeconfig
			f.start(t)
			f.create(t, loggerGVR, newLogger("storm", "storm", 5, 1))
			f.waitLoggerState(t, "storm", stateAvailable)
			return ctx
		}).
		Assess("the operator converges to the last spec within a bounded number of requests", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			before := len(p.requests(func(proxiedRequest) bool { return true }))
			for i := 1; i <= writes; i++ {
				patch := fmt.Sprintf(`{"metadata":{"labels":{"storm":"%d"}},"spec":{"replicas":%d,"timeInterval":%d}}`, i, 1+i%3, 5+i)
				if _, err := f.c.Dynamic.Resource(loggerGVR).Namespace(f.ns).Patch(ctx, "storm", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					t.Fatalf("storm write %d: %v", i, err)
				}
			}
			want := wantDeployment{logger: "storm", printed: "storm", interval: 5 + writes, replicas: 1 + writes%3, image: defaultImage}
			f.waitDeployment(t, deploymentName("storm"), func(d *appsv1.Deployment) (bool, string) {
				p := want.problems(d)
				return len(p) == 0, strings.Join(p, "; ")
			})
			f.waitLoggerState(t, "storm", stateAvailable)
			spent := len(p.requests(func(proxiedRequest) bool { return true })) - before
			conflicts := len(p.requests(func(r proxiedRequest) bool { return r.status == http.StatusConflict }))
			t.Logf("%d storm writes cost the operator %d requests, %d of them answered 409 Conflict", writes, spent, conflicts)
			// Each storm write may cost a reconcile: a read-free Deployment
			// update and a status write, plus retries of conflicts. Ten per
			// write is generous; a hot loop on conflicts spends thousands.
			if spent > 10*writes {
				t.Errorf("the operator spent %d requests on %d writes; want at most %d", spent, writes, 10*writes)
			}
			return ctx
		}).Feature()
}

func ptrTo[T any](v T) *T { return &v }

package behaviour

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// retryAttempts is how many refused creates the retry check waits for before
// it lifts the quota. With the per-key backoff of stages 04 to 06 (5 ms,
// doubling) ten attempts take about 2.5 s, long enough for the growing gaps
// to show.
const retryAttempts = 10

// Retry checks that a write the API server refused is retried, with backoff,
// until it succeeds (Stage.Retries; stages 04 to 06). A stage's e2e test can
// call it on its own; Run calls it for stages that retry.
func Retry(t *testing.T, s Stage) {
	t.Helper()
	if !s.Retries {
		// 02 and 03 do not retry, and their own tests assert that.
		t.Fatalf("Retry is for stages that retry failed writes; %s has Stage.Retries false", s.Package)
	}
	harness.Env().Test(t, retryFeature(s))
}

// retryFeature: a ResourceQuota that allows no Deployments makes the API
// server refuse the Logger's Deployment (403 Forbidden, "exceeded quota").
// The operator must keep trying, each time waiting longer (a hot loop would
// hammer the API server; a fixed interval would not be backoff), and once the
// quota is gone it must create the Deployment on its own: nothing about the
// Logger changes to prompt it.
//
// The attempts are counted and timed at the one place every stage has in
// common, whatever its machinery and log format: the HTTP requests it sends.
// The operator talks to the API server through apiProxy, which records them.
func retryFeature(s Stage) features.Feature {
	var (
		f     *fixture
		p     *apiProxy
		quota = &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "no-deployments"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/deployments.apps": resource.MustParse("0")}},
		}
		want = wantDeployment{logger: "blocked", printed: "blocked-e2e", interval: 5, replicas: 1, image: defaultImage}
		// A refused attempt to create the Logger's Deployment.
		refusedCreate = func(r proxiedRequest) bool { return r.isCreateOf("deployments") && r.status == http.StatusForbidden }
	)
	return features.New("a refused write is retried with backoff").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "retry")
			if _, err := f.C.Kube.CoreV1().ResourceQuotas(f.NS).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// The API server enforces a quota once kube-controller-manager
			// has written its status; a create before that is let through.
			harness.Eventually(t, converge, "the quota's status", func(ctx context.Context) (bool, string, error) {
				q, err := f.C.Kube.CoreV1().ResourceQuotas(f.NS).Get(ctx, quota.Name, metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				_, ok := q.Status.Hard["count/deployments.apps"]
				return ok, "status.hard not written yet", nil
			})
			p = newAPIProxy(t, operatorIdentity(t, f))
			f.Kubeconfig = p.kubeconfig
			f.start(t)
			return ctx
		}).
		Assess("while a quota forbids Deployments, the create is retried, each time after a longer wait", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f.Create(t, loggerGVR, newLogger(want.logger, want.printed, want.interval, int64(want.replicas)))
			harness.Eventually(t, converge, fmt.Sprintf("%d refused attempts to create the Deployment", retryAttempts), func(context.Context) (bool, string, error) {
				n := len(p.requests(refusedCreate))
				return n >= retryAttempts, fmt.Sprintf("%d refused creates so far", n), nil
			})
			gaps := intervals(p.requests(refusedCreate))
			t.Logf("gaps between refused creates: %s", formatDurations(gaps))
			// Backoff means the waits grow. Compare the last three with the
			// first three: a hot loop or a fixed retry interval keeps them
			// alike; exponential backoff makes the last ones many times longer.
			early, late := median3(gaps[:3]), median3(gaps[len(gaps)-3:])
			if late < 4*early {
				t.Errorf("the waits between attempts do not grow: the first three's median is %v, the last three's %v; want backoff", early, late)
			}
			return ctx
		}).
		Assess("once the quota is lifted, the Logger converges within the backoff window", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			attempts := p.requests(refusedCreate)
			blockedFor := time.Since(attempts[0].start)
			if err := f.C.Kube.CoreV1().ResourceQuotas(f.NS).Delete(ctx, quota.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			lifted := time.Now()
			// With doubling waits, the next wait is about as long as all the
			// waits so far together, i.e. blockedFor. Twice that, plus room
			// for a slow machine, bounds when the next attempt must come.
			window := 2*blockedFor + 10*time.Second
			harness.Eventually(t, window, "the Deployment, created by a retry", func(ctx context.Context) (bool, string, error) {
				d, err := f.Deployment(ctx, deploymentName(want.logger))
				if err != nil || d == nil {
					return false, "no Deployment yet", err
				}
				problems := want.problems(d)
				return len(problems) == 0, strings.Join(problems, "; "), nil
			})
			t.Logf("quota lifted after %v of refusals; Deployment created %v later", blockedFor.Round(time.Millisecond), time.Since(lifted).Round(time.Millisecond))
			f.waitLoggerState(t, want.logger, stateAvailable)
			return ctx
		}).
		Feature()
}

// intervals are the times between consecutive requests.
func intervals(reqs []proxiedRequest) []time.Duration {
	var d []time.Duration
	for i := 1; i < len(reqs); i++ {
		d = append(d, reqs[i].start.Sub(reqs[i-1].start))
	}
	return d
}

// median3 is the middle one of three waits. Unlike their mean, it does not
// move when one attempt is late because the machine was busy.
func median3(ds []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(ds[:3]))
	return s[1]
}

func formatDurations(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.Round(time.Millisecond).String()
	}
	return strings.Join(s, " ")
}

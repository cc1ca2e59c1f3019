package behaviour

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/apicount"
	"github.com/operator-flow/operator-flow/harness"
)

// noWritesWhenConverged: an operator that finds every object already as it
// should be writes nothing.
//
// Proving that nothing happens needs a moment at which the operator has
// certainly looked at everything, without sleeping and hoping. The
// convention of docs/behaviour.md gives one: an operator logs "in sync" and
// the object's namespace/name whenever it examined an object and found
// nothing to do. So operator A converges the objects and is stopped; a fresh
// operator B starts on them, and once B has logged "in sync" for every
// object it is stopped too, and the request counts it printed on the way out
// (package apicount) must show no write. A fresh process also shows that the
// objects converge for good: no hidden state of A's is needed.
func noWritesWhenConverged(s Stage) features.Feature {
	var f *fixture
	tickets := []ticket{{"oslo-bergen", "Oslo", "Bergen", 1}, {"paris-rome", "Paris", "Rome", 3}}
	loggers := []string{"audit", "heartbeat"}
	return features.New("converged objects cause no writes").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "insync")
			f.start(t)
			return ctx
		}).
		Assess("operator A converges two tickets and two Loggers", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			for _, tk := range tickets {
				f.Create(t, ticketGVR, tk.object())
			}
			for _, name := range loggers {
				f.Create(t, loggerGVR, newLogger(name, name+"-e2e", 10, 1))
			}
			for _, tk := range tickets {
				f.waitTicketBooked(t, tk.name, tk.from, tk.to, tk.number)
			}
			for _, name := range loggers {
				want := wantDeployment{logger: name, printed: name + "-e2e", interval: 10, replicas: 1, image: defaultImage}
				f.waitDeployment(t, deploymentName(name), func(d *appsv1.Deployment) (bool, string) {
					p := want.problems(d)
					return len(p) == 0, strings.Join(p, "; ")
				})
				f.waitLoggerState(t, name, stateAvailable)
			}
			return ctx
		}).
		Assess("A stops cleanly on SIGTERM and prints its request counts", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			stopAndCount(t, f.op)
			return ctx
		}).
		Assess("a fresh operator B examines every object and writes nothing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			names := append([]string{}, loggers...)
			for _, tk := range tickets {
				names = append(names, tk.name)
			}
			// B talks to the API server through the test's proxy, which
			// counts its writes independently of B's own summary: a client
			// built without apicount would hide its writes from the summary,
			// not from the proxy.
			p := newAPIProxy(t, operatorIdentity(t, f))
			f.Kubeconfig = p.kubeconfig
			// A was stopped above, so this only starts B and waits.
			b := f.restartInSync(t, names...)
			counts := stopAndCount(t, b)
			if _, _, writes := apicount.Totals(counts); writes != 0 {
				t.Errorf("operator B wrote %d times to objects that were already converged:\n%s", writes, summary(b))
			}
			sent := p.requests(func(r proxiedRequest) bool { return !r.start.Before(f.started) })
			var writes []string
			for _, r := range sent {
				if isWrite(r.method) {
					writes = append(writes, r.method+" "+r.path)
				}
			}
			t.Logf("the proxy saw operator B send %d requests, %d of them writes", len(sent), len(writes))
			if len(sent) == 0 {
				t.Errorf("the proxy saw no request from operator B: it did not use the kubeconfig it was given")
			}
			if len(writes) != 0 {
				t.Errorf("the proxy saw operator B write %d times to objects that were already converged: %v", len(writes), writes)
			}
			if gets := resourceGets(counts); s.CachedReads && gets != 0 {
				t.Errorf("operator B sent %d GETs although it reads from a cache:\n%s", gets, summary(b))
			}
			return ctx
		}).
		Feature()
}

// stopAndCount sends SIGTERM, checks that the operator shuts down the way
// docs/behaviour.md says (exit 0, "shutting down", the request summary), and
// returns the counts from its summary.
func stopAndCount(t *testing.T, op *harness.Operator) map[apicount.Key]int {
	t.Helper()
	if err := op.Stop(); err != nil {
		t.Fatalf("the operator did not exit cleanly after SIGTERM: %v", err)
	}
	if op.CountLog("shutting down") == 0 {
		t.Errorf(`the operator did not log "shutting down" on SIGTERM`)
	}
	counts, complete := apicount.ParseSummary(op.Log())
	if !complete {
		t.Fatalf("the operator printed no complete API request summary at exit; its last lines:\n%s", summary(op))
	}
	return counts
}

// resourceGets counts GETs of single objects, leaving out discovery and
// other paths that are not resources.
func resourceGets(counts map[apicount.Key]int) int {
	n := 0
	for k, v := range counts {
		if k.Verb == "GET" && k.Resource != "(discovery)" && !strings.HasPrefix(k.Resource, "/") {
			n += v
		}
	}
	return n
}

// summary is the tail of an operator's output, where its summary is.
func summary(op *harness.Operator) string {
	out := op.Log()
	if i := strings.LastIndex(out, "API requests made by this operator:"); i >= 0 {
		return out[i:]
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-10):], "\n")
}

package behaviour

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// retryAttempts is how many refused creates the retry check waits for before
// it lifts the quota. With client-go's default limiter (5 ms, doubling) ten
// attempts take about 2.5 s, long enough for the growing gaps to show.
const retryAttempts = 10

// Retry checks that a write the API server refused is retried, with backoff,
// until it succeeds (Stage.Retries; stages 04 to 06). A stage's e2e test can
// call it on its own; Run calls it for stages that retry.
func Retry(t *testing.T, s Stage) {
	t.Helper()
	if !s.Retries {
		t.Skipf("%s does not retry failed writes (Stage.Retries is false)", s.Package)
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
			if _, err := f.c.Kube.CoreV1().ResourceQuotas(f.ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			p = newAPIProxy(t, operatorIdentity(t, f))
			f.kubeconfig = p.kubeconfig
			f.start(t)
			return ctx
		}).
		Assess("while a quota forbids Deployments, the create is retried, each time after a longer wait", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f.create(t, loggerGVR, newLogger(want.logger, want.printed, want.interval, int64(want.replicas)))
			harness.Eventually(t, converge, fmt.Sprintf("%d refused attempts to create the Deployment", retryAttempts), func(context.Context) (bool, string, error) {
				n := len(p.requests(refusedCreate))
				return n >= retryAttempts, fmt.Sprintf("%d refused creates so far", n), nil
			})
			gaps := intervals(p.requests(refusedCreate))
			t.Logf("gaps between refused creates: %s", formatDurations(gaps))
			// Backoff means the waits grow. Compare the last three with the
			// first three: a hot loop or a fixed retry interval keeps them
			// alike; exponential backoff makes the last ones many times longer.
			early, late := mean(gaps[:3]), mean(gaps[len(gaps)-3:])
			if late < 4*early {
				t.Errorf("the waits between attempts do not grow: first three average %v, last three %v; want backoff", early, late)
			}
			return ctx
		}).
		Assess("once the quota is lifted, the Logger converges within the backoff window", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			attempts := p.requests(refusedCreate)
			blockedFor := time.Since(attempts[0].start)
			if err := f.c.Kube.CoreV1().ResourceQuotas(f.ns).Delete(ctx, quota.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			lifted := time.Now()
			// With doubling waits, the next wait is about as long as all the
			// waits so far together, i.e. blockedFor. Twice that, plus room
			// for a slow machine, bounds when the next attempt must come.
			window := 2*blockedFor + 10*time.Second
			harness.Eventually(t, window, "the Deployment, created by a retry", func(ctx context.Context) (bool, string, error) {
				d, err := f.deployment(ctx, deploymentName(want.logger))
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

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

func formatDurations(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = d.Round(time.Millisecond).String()
	}
	return strings.Join(s, " ")
}

// ---------------------------------------------------------------------------
// apiProxy stands between an operator and the API server. The operator gets
// a kubeconfig that points at the proxy (plain HTTP on loopback, no
// credentials); the proxy forwards every request with the test's own
// credentials, and records what it forwarded: method, path, when it started,
// and the status the API server answered. Optionally it holds back some
// requests for a moment (slow), which makes concurrency observable: it
// tracks how many of those were in flight at once.
type apiProxy struct {
	kubeconfig string
	srv        *httptest.Server

	slow   func(*http.Request) bool // which requests to delay and count in flight
	slowBy time.Duration

	mu          sync.Mutex
	seen        []proxiedRequest
	inFlight    int
	maxInFlight int
	down        bool // disconnect was called: every request is refused
}

// proxiedRequest is one request the proxy forwarded.
type proxiedRequest struct {
	method, path string
	query        url.Values
	start        time.Time
	status       int // 0 until the API server answered
}

// isCreateOf reports whether the request creates an object of resource (a
// POST to its collection).
func (r proxiedRequest) isCreateOf(resource string) bool {
	return r.method == http.MethodPost && strings.HasSuffix(r.path, "/"+resource)
}

// newAPIProxy starts a proxy to the API server cfg talks to, and writes a
// kubeconfig for it. Both go away when the test ends; the operator using it
// must be stopped before then, which StartOperator's cleanup (registered
// later, so run earlier) does.
func newAPIProxy(t *testing.T, cfg *rest.Config) *apiProxy {
	t.Helper()
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &apiProxy{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport: transport,
		// Watches stream: pass every event on at once.
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			p.answered(resp.Request.Context(), resp.StatusCode)
			return nil
		},
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := p.record(r)
		if p.isDown() {
			p.answered(ctx, http.StatusServiceUnavailable)
			http.Error(w, "the test proxy is disconnected", http.StatusServiceUnavailable)
			return
		}
		if p.slow != nil && p.slow(r) {
			// Simulated latency: the request is held for slowBy (or until
			// the client gives up), then forwarded.
			p.enter()
			defer p.leave()
			select {
			case <-time.After(p.slowBy):
			case <-r.Context().Done():
			}
		}
		rp.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(func() {
		p.srv.CloseClientConnections()
		p.srv.Close()
	})

	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.srv.URL}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	kc.CurrentContext = "proxy"
	p.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig-proxy")
	if err := clientcmd.WriteToFile(*kc, p.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return p
}

// operatorIdentity is the configuration the operator would use without the
// proxy: the test's own, unless the stage's Args name another kubeconfig (the
// least-privilege test runs the suite as a ServiceAccount that way). The
// proxy forwards with it, so that the operator keeps its identity and its
// permissions; the flag is dropped from the fixture's Args, so that the
// operator talks to the proxy.
func operatorIdentity(t *testing.T, f *fixture) *rest.Config {
	t.Helper()
	var path string
	var others []string
	for i := 0; i < len(f.stage.Args); i++ {
		switch a := f.stage.Args[i]; {
		case a == "--kubeconfig" && i+1 < len(f.stage.Args):
			path = f.stage.Args[i+1] // the last one wins, as in Go's flag package
			i++
		case strings.HasPrefix(a, "--kubeconfig="):
			path = strings.TrimPrefix(a, "--kubeconfig=")
		default:
			others = append(others, a)
		}
	}
	if path == "" {
		return f.c.Config
	}
	f.stage.Args = others
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("reading the operator's kubeconfig %s: %v", path, err)
	}
	return cfg
}

type requestIndex struct{}

// record notes a request and returns a context that remembers its index, so
// that the answer can be matched to it.
func (p *apiProxy) record(r *http.Request) context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, proxiedRequest{method: r.Method, path: r.URL.Path, query: r.URL.Query(), start: time.Now()})
	return context.WithValue(r.Context(), requestIndex{}, len(p.seen)-1)
}

func (p *apiProxy) answered(ctx context.Context, status int) {
	i, ok := ctx.Value(requestIndex{}).(int)
	if !ok {
		return
	}
	p.mu.Lock()
	p.seen[i].status = status
	p.mu.Unlock()
}

// disconnect cuts the operator off, as a network partition would: its open
// connections (and so its watches) are closed, and every new request is
// answered 503 until reconnect.
func (p *apiProxy) disconnect() {
	p.mu.Lock()
	p.down = true
	p.mu.Unlock()
	p.srv.CloseClientConnections()
}

func (p *apiProxy) reconnect() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

func (p *apiProxy) isDown() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.down
}

func (p *apiProxy) enter() {
	p.mu.Lock()
	p.inFlight++
	p.maxInFlight = max(p.maxInFlight, p.inFlight)
	p.mu.Unlock()
}

func (p *apiProxy) leave() {
	p.mu.Lock()
	p.inFlight--
	p.mu.Unlock()
}

// requests returns the recorded requests that match, in the order they came.
func (p *apiProxy) requests(match func(proxiedRequest) bool) []proxiedRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []proxiedRequest
	for _, r := range p.seen {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

// mostInFlight is the largest number of slow requests that were in flight at
// the same moment.
func (p *apiProxy) mostInFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxInFlight
}

package behaviour

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

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

// goneMarker is how a watch stream says "too old resource version": the API
// server's watch cache answers 200 and sends one ERROR event whose Status has
// code 410 (CRDs are always JSON, so the text is there to find).
var goneMarker = []byte(`"code":410`)

// proxiedRequest is one request the proxy forwarded.
type proxiedRequest struct {
	method, path string
	query        url.Values
	start        time.Time
	status       int  // 0 until the API server answered
	gone         bool // 410 Gone: as the status, or as an ERROR event in a watch stream
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
			ctx := resp.Request.Context()
			p.answered(ctx, resp.StatusCode)
			if resp.Request.URL.Query().Get("watch") == "true" {
				resp.Body = &goneScanner{ReadCloser: resp.Body, found: func() { p.markGone(ctx) }}
			}
			return nil
		},
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := p.record(r)
		if p.isDown() {
			// 429 with Retry-After is the API server's own "come back
			// later": client-go retries the watch from the same
			// resourceVersion, where other errors would make it LIST again.
			p.answered(ctx, http.StatusTooManyRequests)
			w.Header().Set("Retry-After", "1")
			http.Error(w, "the test proxy is disconnected", http.StatusTooManyRequests)
			return
		}
		if p.slow != nil && p.slow(r) {
			// Simulated latency: the request is held for slowBy (or until
			// the client gives up), then forwarded. The body is read first:
			// only once it is consumed does net/http watch the connection,
			// and cancel the request's context when the client goes away.
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			p.enter()
			defer p.leave()
			select {
			case <-time.After(p.slowBy):
			case <-r.Context().Done():
				return // the client is gone: nothing to forward
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
		return f.C.Config
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
	p.update(ctx, func(r *proxiedRequest) {
		r.status = status
		r.gone = r.gone || status == http.StatusGone
	})
}

func (p *apiProxy) markGone(ctx context.Context) {
	p.update(ctx, func(r *proxiedRequest) { r.gone = true })
}

func (p *apiProxy) update(ctx context.Context, change func(*proxiedRequest)) {
	i, ok := ctx.Value(requestIndex{}).(int)
	if !ok {
		return
	}
	p.mu.Lock()
	change(&p.seen[i])
	p.mu.Unlock()
}

// goneScanner passes a watch stream through unchanged and calls found when
// the stream carries a 410 ERROR event. It keeps the last few bytes of each
// read, so that a marker split across two reads is still seen.
type goneScanner struct {
	io.ReadCloser
	tail  []byte
	found func()
}

func (g *goneScanner) Read(b []byte) (int, error) {
	n, err := g.ReadCloser.Read(b)
	if n > 0 {
		buf := append(g.tail, b[:n]...)
		if bytes.Contains(buf, goneMarker) {
			g.found()
		}
		g.tail = append(g.tail[:0], buf[max(0, len(buf)-len(goneMarker)+1):]...)
	}
	return n, err
}

// disconnect cuts the operator off, as a network partition would: its open
// connections (and so its watches) are closed, and every new request is
// refused (429, see newAPIProxy) until reconnect.
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

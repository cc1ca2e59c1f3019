package behaviour

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/pem"
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
// a kubeconfig that points at the proxy (HTTPS on loopback, with a random
// bearer token of the proxy's own: any other local process that finds the
// port is answered 401, not given the operator's permissions); the proxy
// forwards every request with the operator's own credentials, and records
// what it forwarded: method, path, when it started, and the status the API
// server answered. Optionally it holds back some requests for a moment
// (slow), which makes concurrency observable: it tracks how many of those
// were in flight at once; and it can hold back one chosen request until the
// test lets it go (setTrap).
type apiProxy struct {
	kubeconfig string
	token      string // the bearer token the kubeconfig carries
	srv        *httptest.Server
	closed     chan struct{} // closed when the test ends: nothing held is forwarded any more

	slow   func(*http.Request) bool // which requests to delay and count in flight
	slowBy time.Duration
	// zombie: a held request is forwarded when its hold ends even if its
	// client has gone meanwhile. Off (the default), the proxy drops it once
	// its client has gone: gracefulShutdown relies on that. On, it models a
	// process that died without its connections being closed (its node
	// died, or was cut off from the API server): the API server sees no
	// client go away, and runs the writes it had received, even after a new
	// process has started.
	zombie bool

	mu          sync.Mutex
	seen        []proxiedRequest
	inFlight    int
	maxInFlight int
	down        bool    // disconnect was called: every request is refused
	traps       []*trap // set and not yet sprung
}

// trap holds back one request, the first that match accepts once the trap
// is set, until the test releases it, on top of any slow delay: a write the
// test knows to be in flight, for as long as the test needs.
type trap struct {
	match    func(r *http.Request, body []byte) bool
	caught   chan struct{} // closed when the request arrives
	orphaned chan struct{} // closed when its client goes away while it is held
	released chan struct{} // closed by release
	method   string        // the caught request's
	path     string        // the caught request's
	body     []byte        // the caught request's
	index    int           // the caught request's, in apiProxy.seen
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// wasCaught reports whether the trap holds its request.
func (tr *trap) wasCaught() bool { return isClosed(tr.caught) }

// clientGone reports whether the caught request's client went away while
// the request was held.
func (tr *trap) clientGone() bool { return isClosed(tr.orphaned) }

// release lets the caught request go on to the API server (in zombie mode
// even when its client is gone), or the request still to come pass at once.
func (tr *trap) release() { close(tr.released) }

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
	p := &apiProxy{token: rand.Text(), closed: make(chan struct{})}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
			// The proxy's token is not for the API server; and client-go's
			// transport keeps an Authorization header it finds instead of
			// adding the operator's credentials.
			r.Out.Header.Del("Authorization")
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
	// TLS because client-go sends a kubeconfig's credentials only to an
	// https server; the certificate is httptest's own, for 127.0.0.1.
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+p.token)) != 1 {
			http.Error(w, "the test proxy needs the bearer token of the kubeconfig it wrote", http.StatusUnauthorized)
			return
		}
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
		// The body is read first, for a trap to look at, and because only
		// once it is consumed does net/http watch the connection, and
		// cancel the request's context when the client goes away.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		slow := p.slow != nil && p.slow(r)
		tr := p.spring(ctx, r, body)
		if slow || tr != nil {
			p.enter()
			defer p.leave()
			var delay time.Duration
			if slow {
				delay = p.slowBy
			}
			if !p.hold(r, delay, tr) {
				return
			}
			if p.zombie {
				// Forwarded whether or not its client is still there. A
				// context with a Done channel, which ReverseProxy then
				// watches instead of the gone client's connection.
				fwd, stop := context.WithCancel(context.WithoutCancel(ctx))
				defer stop()
				ctx = fwd
			}
		}
		rp.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(func() {
		close(p.closed)
		p.srv.CloseClientConnections()
		p.srv.Close()
	})

	kc := clientcmdapi.NewConfig()
	kc.Clusters["proxy"] = &clientcmdapi.Cluster{
		Server:                   p.srv.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw}),
	}
	kc.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{Token: p.token}
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

// hold keeps r back for delay and, if tr caught it, until tr is released.
// It reports whether r is still to be forwarded: not once the test has
// ended, nor once its client has gone, unless the proxy is in zombie mode.
func (p *apiProxy) hold(r *http.Request, delay time.Duration, tr *trap) bool {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	gone := r.Context().Done()
	var released chan struct{} // nil, so never ready, until the delay is over
	for {
		select {
		case <-p.closed:
			return false
		case <-gone:
			if tr != nil {
				close(tr.orphaned)
			}
			if !p.zombie {
				return false
			}
			gone = nil
		case <-timer.C:
			if tr == nil {
				return true
			}
			released = tr.released
		case <-released:
			return true
		}
	}
}

// setTrap sets a trap for the next request match accepts (see trap).
func (p *apiProxy) setTrap(match func(r *http.Request, body []byte) bool) *trap {
	tr := &trap{match: match, caught: make(chan struct{}), orphaned: make(chan struct{}), released: make(chan struct{})}
	p.mu.Lock()
	p.traps = append(p.traps, tr)
	p.mu.Unlock()
	return tr
}

// spring returns the trap r falls into, if any, and takes it off the list.
func (p *apiProxy) spring(ctx context.Context, r *http.Request, body []byte) *trap {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, tr := range p.traps {
		if tr.match(r, body) {
			p.traps = append(p.traps[:i], p.traps[i+1:]...)
			tr.method, tr.path, tr.body, tr.index = r.Method, r.URL.Path, body, ctx.Value(requestIndex{}).(int)
			close(tr.caught)
			return tr
		}
	}
	return nil
}

// answer is the status the API server answered the request tr caught: 0
// while it has not answered (or the request was never forwarded).
func (p *apiProxy) answer(tr *trap) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[tr.index].status
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

package e2e

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// gate stands between the operator and the API server, and holds back the
// first request that matches until the test opens it: a slow API server,
// made to order. The operator gets a kubeconfig that points at the gate
// (plain HTTP on loopback); the gate forwards with the test's credentials.
type gate struct {
	kubeconfig string
	match      func(*http.Request) bool

	mu      sync.Mutex
	holding bool          // the matching request arrived and is held
	opened  chan struct{} // closed by open
	passed  map[string]int
}

func newGate(t *testing.T, cfg *rest.Config, match func(*http.Request) bool) *gate {
	t.Helper()
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{match: match, opened: make(chan struct{}), passed: map[string]int{}}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = target.Host },
		Transport:     transport,
		FlushInterval: -1, // watches stream: pass every event on at once
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.hold(r) {
			select {
			case <-g.opened:
			case <-r.Context().Done():
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		g.open()
		srv.CloseClientConnections()
		srv.Close()
	})

	kc := clientcmdapi.NewConfig()
	kc.Clusters["gate"] = &clientcmdapi.Cluster{Server: srv.URL}
	kc.AuthInfos["gate"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["gate"] = &clientcmdapi.Context{Cluster: "gate", AuthInfo: "gate"}
	kc.CurrentContext = "gate"
	g.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig-gate")
	if err := clientcmd.WriteToFile(*kc, g.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return g
}

// hold reports whether r is the request to hold back: the first one that
// matches. It also counts requests by method and path.
func (g *gate) hold(r *http.Request) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.passed[r.Method+" "+r.URL.Path]++
	if g.holding || !g.match(r) {
		return false
	}
	g.holding = true
	return true
}

// isHolding reports whether the request to hold back has arrived.
func (g *gate) isHolding() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.holding
}

// open lets the held request, and every later one, through.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.opened:
	default:
		close(g.opened)
	}
}

// count is how many requests with this method and path came through.
func (g *gate) count(method, path string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.passed[method+" "+path]
}

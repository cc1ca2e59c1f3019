package behaviour

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/operator-flow/operator-flow/harness"
)

// fakeAPIServer answers every request 200 and remembers each request's
// method, path and Authorization header.
type fakeAPIServer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string // "METHOD PATH AUTHORIZATION"
}

func newFakeAPIServer(t *testing.T) *fakeAPIServer {
	a := &fakeAPIServer{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.seen = append(a.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *fakeAPIServer) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// The proxy forwards with the operator's credentials (here the token
// "operator-token"), so a local process that reaches its port without the
// proxy's own token must be refused, and the proxy's token must not travel
// on to the API server.
func TestProxyRequiresItsToken(t *testing.T) {
	api := newFakeAPIServer(t)
	p := newAPIProxy(t, &rest.Config{Host: api.srv.URL, BearerToken: "operator-token"})

	for name, header := range map[string]string{"no token": "", "another token": "Bearer " + strings.Repeat("x", len(p.token))} {
		req, _ := http.NewRequest(http.MethodGet, p.srv.URL+"/api/v1/namespaces/default/secrets", nil)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		resp, err := p.srv.Client().Do(req) // trusts the proxy's certificate
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: the proxy answered %d, want 401", name, resp.StatusCode)
		}
	}
	if seen := api.requests(); len(seen) != 0 {
		t.Fatalf("requests without the proxy's token reached the API server: %v", seen)
	}
	if n := len(p.requests(func(proxiedRequest) bool { return true })); n != 0 {
		t.Errorf("the proxy recorded %d refused requests as the operator's", n)
	}

	// What an operator does: a client built from the proxy's kubeconfig.
	cfg, err := clientcmd.BuildConfigFromFlags("", p.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(cfg.Host + "/api/v1/namespaces/default/configmaps")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("with the kubeconfig's token the proxy answered %d, want the API server's 200", resp.StatusCode)
	}
	want := []string{"GET /api/v1/namespaces/default/configmaps Bearer operator-token"}
	if seen := api.requests(); len(seen) != 1 || seen[0] != want[0] {
		t.Errorf("the API server saw %q, want %q: forwarded with the operator's credentials, not the proxy's token", seen, want)
	}
}

// A trapped write whose client goes away is dropped by default, and
// forwarded once released in zombie mode, as a dead process's write still
// in the API server's hands would run.
func TestProxyZombieForwardsAHeldWriteOfAGoneClient(t *testing.T) {
	for _, zombie := range []bool{false, true} {
		api := newFakeAPIServer(t)
		p := newAPIProxy(t, &rest.Config{Host: api.srv.URL})
		p.zombie = zombie
		tr := p.setTrap(func(r *http.Request, _ []byte) bool { return r.Method == http.MethodPost })
		ctx, die := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.srv.URL+"/api/v1/namespaces/default/configmaps", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+p.token)
		sent := make(chan error, 1)
		go func() {
			resp, err := p.srv.Client().Do(req)
			if err == nil {
				_ = resp.Body.Close()
			}
			sent <- err
		}()
		harness.Eventually(t, 10*time.Second, "the write to be held", func(context.Context) (bool, string, error) {
			return tr.wasCaught(), "", nil
		})
		die() // the client goes away: the transport closes its connection
		if err := <-sent; err == nil {
			t.Fatal("the client got an answer although it went away while its write was held")
		}
		harness.Eventually(t, 10*time.Second, "the proxy to see the client gone", func(context.Context) (bool, string, error) {
			return tr.clientGone(), "", nil
		})
		tr.release()
		if zombie {
			harness.Eventually(t, 10*time.Second, "the held write to reach the API server", func(context.Context) (bool, string, error) {
				return p.answer(tr) == http.StatusOK, "", nil
			})
			continue
		}
		// Dropped: the handler has returned without forwarding.
		harness.Eventually(t, 10*time.Second, "the proxy to let go of the held write", func(context.Context) (bool, string, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.inFlight == 0, "", nil
		})
		if seen := api.requests(); len(seen) != 0 || p.answer(tr) != 0 {
			t.Errorf("without zombie mode, the held write of a gone client reached the API server: %v", seen)
		}
	}
}

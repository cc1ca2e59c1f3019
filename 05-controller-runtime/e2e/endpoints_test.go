package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// TestEndpoints: the Manager serves /healthz and /readyz on the probe
// address and Prometheus metrics on the metrics address, and the metrics
// count this stage's own reconciles. /metrics is HTTPS and answers only a
// caller whose token the API server authenticates and whose user may GET
// /metrics (config/rbac/metrics_reader_role.yaml); anyone else is refused.
func TestEndpoints(t *testing.T) {
	f := features.New("metrics and health endpoints").
		Assess("healthz, readyz and metrics answer", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, err := harness.NewClients(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			ns := c.Namespace(t, "endpoints")
			metrics, probes := freeAddr(t), freeAddr(t)
			bin := harness.BuildOperator(t, harness.OperatorPackage(stage.Package))
			harness.StartOperator(t, cfg.KubeconfigFile(), bin, "--namespace", ns,
				"--metrics-bind-address", metrics, "--health-probe-bind-address", probes)
			createTicket(t, c, ns, "counted")
			waitBooked(t, c, ns, "counted")

			for _, path := range []string{"/healthz", "/readyz"} {
				harness.Eventually(t, converge, path+" to answer 200", func(ctx context.Context) (bool, string, error) {
					code, body := get(ctx, "http://"+probes+path)
					return code == http.StatusOK, fmt.Sprintf("%d %s", code, body), nil
				})
			}
			url := "https://" + metrics + "/metrics"
			reader := metricsToken(t, c, ns, "scraper", true)
			stranger := metricsToken(t, c, ns, "stranger", false)
			// Who asks decides the answer: no token is not authenticated,
			// a token without the metrics-reader role is not authorized.
			harness.Eventually(t, converge, "/metrics to refuse an anonymous request with 401", func(ctx context.Context) (bool, string, error) {
				code, body := getWithToken(ctx, url, "")
				return code == http.StatusUnauthorized, fmt.Sprintf("%d %s", code, body), nil
			})
			if code, body := getWithToken(context.Background(), url, stranger); code != http.StatusForbidden {
				t.Errorf("/metrics answered a ServiceAccount without the metrics-reader role with %d %q, want 403", code, body)
			}
			if code, _ := get(context.Background(), "http://"+metrics+"/metrics"); code == http.StatusOK {
				t.Errorf("/metrics answered plain HTTP with 200; it must be HTTPS only")
			}
			// A client that offers HTTP/2 gets HTTP/1.1.
			conn, err := tls.Dial("tcp", metrics, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
			if err != nil {
				t.Fatal(err)
			}
			if p := conn.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
				t.Errorf("/metrics negotiated %q with a client offering h2 and http/1.1, want http/1.1", p)
			}
			_ = conn.Close() // nothing was sent on it
			// The ticket was reconciled successfully at least once.
			harness.Eventually(t, converge, "a reconcile counted in /metrics", func(ctx context.Context) (bool, string, error) {
				_, body := getWithToken(ctx, url, reader)
				for _, line := range strings.Split(body, "\n") {
					if strings.HasPrefix(line, `controller_runtime_reconcile_total{controller="flightticket",result="success"}`) && !strings.HasSuffix(line, " 0") {
						return true, line, nil
					}
				}
				return false, "no successful flightticket reconcile in /metrics", nil
			})
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// freeAddr returns a loopback address with a port nobody listens on right
// now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// get returns the status and body of a GET, or 0 when nothing answers (yet).
func get(ctx context.Context, url string) (int, string) { return getWithToken(ctx, url, "") }

// getWithToken is get with a bearer token, when token is not empty. The
// operator's metrics certificate is self-signed, so it is not verified:
// what is tested here is who may read, not who is serving.
func getWithToken(ctx context.Context, url, token string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below; nothing to learn from closing
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metricsToken creates a ServiceAccount in ns and returns a token for it.
// With reader, the account is bound to the ClusterRole the stage ships for
// scrapers (config/rbac/metrics_reader_role.yaml), as Prometheus's would be.
func metricsToken(t *testing.T, c *harness.Clients, ns, name string, reader bool) string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if reader {
		objs, err := harness.ReadObjects(harness.RepoPath("05-controller-runtime", "config", "rbac", "metrics_reader_role.yaml"))
		if err != nil || len(objs) != 1 {
			t.Fatalf("reading config/rbac/metrics_reader_role.yaml: %v (%d objects, want 1)", err, len(objs))
		}
		role := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, role); err != nil {
			t.Fatal(err)
		}
		// A copy under a name of this test's own, removed at the end.
		role.ObjectMeta = metav1.ObjectMeta{Name: role.Name + "-" + ns}
		if _, err := c.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: ns}},
		}
		if _, err := c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
			_ = c.Kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
		})
	}
	tok, err := c.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Status.Token
}

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// TestEndpoints: the Manager serves /healthz and /readyz on the probe
// address and Prometheus metrics on the metrics address, and the metrics
// count this stage's own reconciles.
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
			// The ticket was reconciled successfully at least once.
			harness.Eventually(t, converge, "a reconcile counted in /metrics", func(ctx context.Context) (bool, string, error) {
				_, body := get(ctx, "http://"+metrics+"/metrics")
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
	defer l.Close()
	return l.Addr().String()
}

// get returns the status and body of a GET, or 0 when nothing answers (yet).
func get(ctx context.Context, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

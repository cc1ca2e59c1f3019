package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/apicount"
	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/trace"
)

// traced is what one stage's test saw: the trace of a Logger from apply to
// deletion, the trace of a FlightTicket from apply to Booked, and the
// operator's whole recording (its LIST and WATCH requests at start come
// before any trace).
type traced struct {
	logger, ticket trace.Timeline
	recording      []apicount.Hop
}

// crdsOf is where a stage's CRDs are, as labs/lab.sh finds them.
func crdsOf(dir string) string {
	if _, err := os.Stat(harness.RepoPath(dir, "config", "crd")); err == nil {
		return filepath.Join(dir, "config", "crd")
	}
	return filepath.Join("01-crd-yaml", "crds")
}

// ready is the operator's log line that says its watches are open, and how
// many times it must appear (once per kind it watches).
var ready = map[int]struct {
	line  string
	times int
}{
	2: {"LIST ", 3},
	3: {"caches filled", 1},
	4: {"caches synced", 2},
	5: {"Starting workers", 2},
	6: {"Starting workers", 2},
}

const loggerYAML = `apiVersion: example.com/v1
kind: Logger
metadata:
  name: traced
spec:
  name: traced
  timeInterval: 30
  replicas: 1
`

const ticketYAML = `apiVersion: flights.com/v1
kind: FlightTicket
metadata:
  name: traced
spec:
  from: Oslo
  to: Bergen
  number: 1
`

// traceStage runs stage n's operator (none for stage 1) in a namespace of
// its own, with its requests and watch events recorded, and traces a Logger
// (applied, converged, deleted) and a FlightTicket (applied, converged).
func traceStage(t *testing.T, ctx context.Context, cfg *envconf.Config, stage trace.Stage) traced {
	t.Helper()
	n := stage.Number
	c, err := harness.NewClients(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.InstallCRDs(ctx, harness.RepoPath(crdsOf(stage.Dir))); err != nil {
		t.Fatalf("installing stage %s's CRDs: %v", stage.Dir, err)
	}
	installAdmission(t, ctx, c, stage.Dir)
	if stage.LoggerStored != "" {
		removeLoggerCRD(t, c)
	}
	ns := c.Namespace(t, "trace-"+strings.ToLower(stage.ID))
	audit, err := trace.AuditLog(harness.RepoPath(), cfg.KubeconfigFile())
	if err != nil {
		t.Fatal(err)
	}
	tracer := func(o trace.Object, manifest string, del bool) *trace.Tracer {
		return &trace.Tracer{Stage: stage, Object: o, Manifest: []byte(manifest), Delete: del,
			Kubectl: harness.RepoPath("bin", "kubectl"), Kubeconfig: cfg.KubeconfigFile(), Audit: audit,
			Quiet: time.Second, Progress: func(s string) { t.Log(s) }}
	}
	lt := tracer(trace.Object{Resource: "loggers", Namespace: ns, Name: "traced"}, loggerYAML, true)
	tt := tracer(trace.Object{Resource: "flighttickets", Namespace: ns, Name: "traced"}, ticketYAML, false)

	record := filepath.Join(t.TempDir(), "record.jsonl")
	if n >= 2 {
		// The operator inherits the recording's file from the environment.
		t.Setenv(apicount.RecordEnv, record)
		bin := harness.BuildOperator(t, "./"+stage.OperatorDir())
		args := []string{"--namespace", ns}
		if n >= 5 {
			args = append(args, "--metrics-bind-address=0", "--health-probe-bind-address=0", "--zap-time-encoding=rfc3339nano")
		}
		args = append(args, webhookFor(t, cfg, stage, ns)...)
		op := harness.StartOperator(t, cfg.KubeconfigFile(), bin, args...)
		r := ready[n]
		harness.Eventually(t, time.Minute, "the operator to open its watches", func(context.Context) (bool, string, error) {
			return op.CountLog(r.line) >= r.times, op.Log(), nil
		})
		for _, tr := range []*trace.Tracer{lt, tt} {
			tr.Record, tr.Log = trace.File(record), trace.Growing(func() []byte { return []byte(op.Log()) })
		}
	}
	var out traced
	if out.logger, err = lt.Run(ctx); err != nil {
		t.Fatalf("tracing a Logger: %v", err)
	}
	if out.ticket, err = tt.Run(ctx); err != nil {
		t.Fatalf("tracing a FlightTicket: %v", err)
	}
	b, _ := os.ReadFile(record)
	out.recording = trace.ParseRecord(b)
	return out
}

// webhookFor installs the webhook of a module that serves one (A2: its
// hack/install-webhook, as make lab-A2 runs it) for namespace ns, on a free
// port, deletes its configurations when the test ends, and returns the
// operator's flags that serve it. None for the others.
func webhookFor(t *testing.T, cfg *envconf.Config, stage trace.Stage, ns string) []string {
	t.Helper()
	installer := "./" + stage.Dir + "/hack/install-webhook"
	if _, err := os.Stat(harness.RepoPath(installer)); err != nil {
		return nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	certs := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("go", append([]string{"run", installer, "--kubeconfig", cfg.KubeconfigFile()}, args...)...)
		cmd.Dir = harness.RepoPath()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", installer, args, err, out)
		}
	}
	run("--namespace", ns, "--cert-dir", certs, "--port", strconv.Itoa(port), "--failure-policy", "Fail")
	t.Cleanup(func() { run("--delete") })
	return []string{"--webhook-bind-address=127.0.0.1:" + strconv.Itoa(port), "--webhook-cert-dir=" + certs}
}

// removeLoggerCRD deletes the Logger CRD when the test ends, after the
// operator has stopped (call it before the operator starts: cleanups run
// last first), and waits until it is gone: a Logger CRD that lists
// v2 in status.storedVersions cannot be replaced by the v1-only CRD the
// stages and the next packages install (the API server refuses a CRD whose
// versions leave out a stored one). The conversion goes to None
// first: deleting the CRD deletes every Logger left in the cluster, which
// the API server reads to do so, and no webhook answers any more.
func removeLoggerCRD(t *testing.T, c *harness.Clients) {
	t.Helper()
	crds := c.Dynamic.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	const name = "loggers.example.com"
	t.Cleanup(func() {
		ctx := context.Background()
		_, err := crds.Patch(ctx, name, types.JSONPatchType,
			[]byte(`[{"op":"replace","path":"/spec/conversion","value":{"strategy":"None"}}]`), metav1.PatchOptions{})
		if err == nil {
			err = crds.Delete(ctx, name, metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Logger CRD: %v", err)
			return
		}
		harness.Eventually(t, 2*time.Minute, "the Logger CRD to be gone", func(ctx context.Context) (bool, string, error) {
			_, err := crds.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, "", nil
			}
			return false, "the CRD is still there", err
		})
	})
}

// installAdmission installs a module's admission policies, as make lab-A1
// does, and removes them when the test ends.
func installAdmission(t *testing.T, ctx context.Context, c *harness.Clients, dir string) {
	t.Helper()
	files, err := harness.YAMLFiles(harness.RepoPath(dir, "config", "admission"))
	if os.IsNotExist(err) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		objs, err := harness.ReadObjects(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if err := c.Apply(ctx, o, ""); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			t.Cleanup(func() {
				if r, err := c.Resource(o.GroupVersionKind(), ""); err == nil {
					_ = r.Delete(context.Background(), o.GetName(), metav1.DeleteOptions{})
				}
			})
		}
	}
}

// TestTrace traces each stage in turn, then each day-two module (one
// stage's CRDs at a time, as the labs install them) and checks the traces'
// shapes and the lab's diagram.
func TestTrace(t *testing.T) {
	for _, stage := range trace.Stages {
		f := features.New(stage.Dir).Assess("trace", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			tr := traceStage(t, ctx, cfg, stage)
			logTimeline(t, tr.logger)
			logTimeline(t, tr.ticket)
			shapes[stage.ID](t, tr)
			checkLabDiagram(t, stage.ID, tr)
			return ctx
		}).Feature()
		harness.Env().Test(t, f)
	}
}

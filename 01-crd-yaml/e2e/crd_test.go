package e2e

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

var (
	crdGVR     = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	ticketGVR  = harness.TicketGVR
	loggersGVR = harness.LoggerGVR
)

func clients(t *testing.T, cfg *envconf.Config) *harness.Clients {
	t.Helper()
	c, err := harness.NewClients(cfg.Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCRDsAreEstablished(t *testing.T) {
	f := features.New("CRDs").
		Assess("both CRDs report Established=True", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := clients(t, cfg)
			for _, name := range []string{"flighttickets.flights.com", "loggers.example.com"} {
				u, err := c.Dynamic.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatalf("CRD %s: %v", name, err)
				}
				if got := condition(u, "Established"); got != "True" {
					t.Errorf("CRD %s: Established=%q, want True", name, got)
				}
				if got := condition(u, "NamesAccepted"); got != "True" {
					t.Errorf("CRD %s: NamesAccepted=%q, want True (a name clashes with another CRD)", name, got)
				}
			}
			return ctx
		}).
		Assess("the short name ft resolves to flighttickets", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := clients(t, cfg)
			res, err := c.Kube.Discovery().ServerResourcesForGroupVersion("flights.com/v1")
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.APIResources {
				if r.Name == "flighttickets" {
					if len(r.ShortNames) != 1 || r.ShortNames[0] != "ft" {
						t.Errorf("short names = %v, want [ft]", r.ShortNames)
					}
					return ctx
				}
			}
			t.Errorf("discovery does not list flighttickets in flights.com/v1: %+v", res.APIResources)
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

func TestSamplesAreAccepted(t *testing.T) {
	f := features.New("samples").
		Assess("every file in samples/ is stored as written", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := clients(t, cfg)
			ns := c.Namespace(t, "crd-samples")
			files, err := harness.YAMLFiles(harness.RepoPath("01-crd-yaml", "samples"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no samples found: %v", err)
			}
			for _, file := range files {
				objs, err := harness.ReadObjects(file)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range objs {
					r, err := c.Resource(o.GroupVersionKind(), ns)
					if err != nil {
						t.Fatal(err)
					}
					got, err := r.Create(ctx, o, metav1.CreateOptions{FieldValidation: "Strict"})
					if err != nil {
						t.Errorf("%s was rejected: %v", filepath.Base(file), err)
						continue
					}
					// Nothing reconciles in stage 01: the object is stored,
					// and that is all. Its status is empty.
					if _, found, _ := unstructured.NestedMap(got.Object, "status"); found {
						t.Errorf("%s: a fresh object has a status, yet no controller runs: %v", filepath.Base(file), got.Object["status"])
					}
				}
			}
			return ctx
		}).
		Assess("a Logger without replicas gets the schema default, 1", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := clients(t, cfg)
			ns := c.Namespace(t, "crd-default")
			objs, err := harness.ReadObjects(harness.RepoPath("01-crd-yaml", "samples", "logger-default-replicas.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Dynamic.Resource(loggersGVR).Namespace(ns).Create(ctx, objs[0], metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); r != 1 {
				t.Errorf("spec.replicas = %d, want the default 1", r)
			}
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

// invalidCases is how many files invalid/ holds.
const invalidCases = 29

// TestInvalidObjectsAreRejected sends every file in invalid/ twice, once as a
// server-side dry run and once for real. Both must fail with an error that
// contains the file's "# expect-error:" text (the field it names), and
// nothing may be stored.
func TestInvalidObjectsAreRejected(t *testing.T) {
	f := features.New("invalid objects").
		Assess("every file in invalid/ is rejected with an error naming the field", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := clients(t, cfg)
			ns := c.Namespace(t, "crd-invalid")
			files, err := harness.YAMLFiles(harness.RepoPath("01-crd-yaml", "invalid"))
			// Pinned, so that a case deleted by mistake is noticed; the
			// READMEs give the same number. Adding a case means raising it.
			if err != nil || len(files) != invalidCases {
				t.Fatalf("want %d files in invalid/, found %d (%v)", invalidCases, len(files), err)
			}
			for _, file := range files {
				t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
					want := expectedError(t, file)
					objs, err := harness.ReadObjects(file)
					if err != nil || len(objs) != 1 {
						t.Fatalf("want one object in %s: %v", file, err)
					}
					o := objs[0]
					r, err := c.Resource(o.GroupVersionKind(), ns)
					if err != nil {
						t.Fatal(err)
					}
					for _, dryRun := range [][]string{{metav1.DryRunAll}, nil} {
						// Strict field validation is what kubectl asks for by
						// default; without it the server's default, Warn,
						// prunes unknown fields with a warning instead of
						// rejecting them.
						_, err := r.Create(ctx, o, metav1.CreateOptions{DryRun: dryRun, FieldValidation: "Strict"})
						switch {
						case err == nil:
							t.Fatalf("accepted (dryRun=%v), want an error containing %q", dryRun, want)
						case !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err):
							t.Fatalf("dryRun=%v: want a validation error (422 or 400), got %v", dryRun, err)
						case !strings.Contains(err.Error(), want):
							t.Fatalf("dryRun=%v: the error does not name %q:\n%v", dryRun, want, err)
						}
					}
					if _, err := r.Get(ctx, o.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
						t.Errorf("a rejected object was stored anyway (get: %v)", err)
					}
				})
			}
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

// TestWrongAPIVersionIsRejected sends a FlightTicket that claims a version the
// CRD does not serve, once to that version's URL and once to v1's.
func TestWrongAPIVersionIsRejected(t *testing.T) {
	f := features.New("wrong apiVersion").
		Assess("flights.com/v2 is not served, and a v2 body is refused at the v1 URL", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := clients(t, cfg)
			ns := c.Namespace(t, "crd-version")
			body := []byte(`{"apiVersion":"flights.com/v2","kind":"FlightTicket","metadata":{"name":"v2"},"spec":{"from":"Oslo","to":"Bergen","number":1}}`)
			rest := c.Kube.Discovery().RESTClient()
			err := rest.Post().AbsPath("apis", "flights.com", "v2", "namespaces", ns, "flighttickets").Body(body).Do(ctx).Error()
			if !apierrors.IsNotFound(err) {
				t.Errorf("POST to flights.com/v2: want 404 NotFound (the CRD serves only v1), got %v", err)
			}
			err = rest.Post().AbsPath("apis", "flights.com", "v1", "namespaces", ns, "flighttickets").Body(body).Do(ctx).Error()
			if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "flights.com/v2") {
				t.Errorf("POST of a v2 body to flights.com/v1: want 400 naming flights.com/v2, got %v", err)
			}
			if _, err := c.Dynamic.Resource(ticketGVR).Namespace(ns).Get(ctx, "v2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("a rejected object was stored anyway (get: %v)", err)
			}
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

func TestServerSideDryRun(t *testing.T) {
	f := features.New("server-side dry run").
		Assess("a dry-run create is validated and defaulted but not stored", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := clients(t, cfg)
			ns := c.Namespace(t, "crd-dryrun")
			objs, err := harness.ReadObjects(harness.RepoPath("01-crd-yaml", "samples", "logger-default-replicas.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			r := c.Dynamic.Resource(loggersGVR).Namespace(ns)
			got, err := r.Create(ctx, objs[0], metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatalf("dry-run create: %v", err)
			}
			// The answer is what would have been stored: defaults applied.
			if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); n != 1 {
				t.Errorf("dry-run answer has spec.replicas=%d, want the default 1", n)
			}
			if _, err := r.Get(ctx, objs[0].GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("after a dry run the object exists (get: %v), want NotFound", err)
			}
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

// TestPrinterColumns asks the API server for the Table that `kubectl get`
// prints, and checks the column names and one row.
func TestPrinterColumns(t *testing.T) {
	f := features.New("printer columns").
		Assess("kubectl get shows the documented columns", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c := clients(t, cfg)
			ns := c.Namespace(t, "crd-columns")
			for _, file := range []string{"ticket-amsterdam-lisbon.yaml", "logger-heartbeat.yaml"} {
				if err := c.ApplyFile(ctx, harness.RepoPath("01-crd-yaml", "samples", file), ns); err != nil {
					t.Fatal(err)
				}
			}
			for _, tc := range []struct {
				gvr  schema.GroupVersionResource
				cols []string
				row  []any
			}{
				{ticketGVR, []string{"Name", "From", "To", "Number", "Phase", "Age"}, []any{"amsterdam-lisbon", "Amsterdam", "Lisbon", int64(2)}},
				{loggersGVR, []string{"Name", "Prints", "Interval", "Replicas", "State", "Age"}, []any{"heartbeat", "heartbeat", int64(5), int64(2)}},
			} {
				table := &metav1.Table{}
				err := c.Kube.Discovery().RESTClient().Get().
					AbsPath("apis", tc.gvr.Group, tc.gvr.Version, "namespaces", ns, tc.gvr.Resource).
					SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
					Do(ctx).Into(table)
				if err != nil {
					t.Fatalf("%s as Table: %v", tc.gvr.Resource, err)
				}
				var names []string
				for _, col := range table.ColumnDefinitions {
					names = append(names, col.Name)
				}
				if strings.Join(names, ",") != strings.Join(tc.cols, ",") {
					t.Errorf("%s columns = %v, want %v", tc.gvr.Resource, names, tc.cols)
				}
				if len(table.Rows) != 1 {
					t.Fatalf("%s: %d rows, want 1", tc.gvr.Resource, len(table.Rows))
				}
				for i, want := range tc.row {
					if got := table.Rows[0].Cells[i]; got != want {
						t.Errorf("%s column %s = %v (%T), want %v", tc.gvr.Resource, names[i], got, got, want)
					}
				}
			}
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

// expectedError reads the "# expect-error: <text>" line of an invalid/ file.
func expectedError(t *testing.T, file string) string {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := fh.Close(); err != nil {
			t.Error(err)
		}
	}()
	s := bufio.NewScanner(fh)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "# expect-error:"); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("%s has no '# expect-error:' line saying what the API server must answer", file)
	return ""
}

func condition(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, x := range conds {
		if m, ok := x.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

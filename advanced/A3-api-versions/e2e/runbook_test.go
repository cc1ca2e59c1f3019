package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/yaml"

	"github.com/operator-flow/operator-flow/harness"
)

// runbookPatch is a JSON patch of the Logger CRD in lab A3's runbook.
var runbookPatch = regexp.MustCompile(`kubectl patch crd loggers\.example\.com --type=json -p '([^']*)'`)

// TestRunbookPatchesTestTheVersion: the runbook's JSON patches address v1
// by its index in spec.versions, so each first tests that the index holds
// v1. On a CRD that lists v2 first the API server refuses each, and the
// CRD keeps its versions; on one in the lab's order, step 5's patch stops
// serving v1.
func TestRunbookPatchesTestTheVersion(t *testing.T) {
	lab, err := os.ReadFile(harness.RepoPath("labs", "A3-api-versions.md"))
	if err != nil {
		t.Fatal(err)
	}
	var patches []string
	for _, m := range runbookPatch.FindAllStringSubmatch(string(lab), -1) {
		patches = append(patches, m[1])
	}
	if len(patches) != 2 {
		t.Fatalf("lab A3 has %d JSON patches of the Logger CRD, want 2 (steps 2 and 5): %q", len(patches), patches)
	}
	withCluster(t, "the runbook's patches on a CRD that lists v2 first", func(t *testing.T, cfg *envconf.Config) {
		ctx := context.Background()
		crds, err := apiextensionsclient.NewForConfig(cfg.Client().RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		for _, order := range [][]string{{"v2", "v1"}, {"v1", "v2"}} {
			crd := loggerLikeCRD(t, "runbook"+order[0]+"s", order)
			if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = deleteCRD(context.Background(), crds, crd.Name) })
			for _, p := range patches {
				if order[0] == "v1" && !strings.Contains(p, "served") {
					continue // step 2's removal: refused in the lab for storedVersions, which a new CRD does not have
				}
				_, err := crds.ApiextensionsV1().CustomResourceDefinitions().Patch(ctx, crd.Name, types.JSONPatchType, []byte(p), metav1.PatchOptions{})
				// A failed test op is a 422 with no more detail; the CRD's
				// versions, read below, show that nothing changed.
				if order[0] == "v2" && !apierrors.IsInvalid(err) {
					t.Errorf("versions %v: patch %s: %v; want it refused (422)", order, p, err)
				}
				if order[0] == "v1" && err != nil {
					t.Errorf("versions %v: patch %s: %v; want it applied", order, p, err)
				}
			}
			now, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range now.Spec.Versions {
				got = append(got, v.Name+map[bool]string{true: "", false: " (not served)"}[v.Served])
			}
			want := map[string][]string{"v2": {"v2", "v1"}, "v1": {"v1 (not served)", "v2"}}[order[0]]
			if !slices.Equal(got, want) {
				t.Errorf("versions %v after the runbook's patches: %v, want %v", order, got, want)
			}
		}
	})
}

// loggerLikeCRD is the module's Logger CRD under another name (plural
// name.example.com), with conversion None and its versions in the given
// order.
func loggerLikeCRD(t *testing.T, plural string, order []string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(harness.RepoPath("advanced", "A3-api-versions", "config", "crd", "example.com_loggers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	crd.Name = plural + ".example.com"
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: "Runbook" + plural, ListKind: "Runbook" + plural + "List"}
	crd.Spec.Conversion = nil
	slices.SortFunc(crd.Spec.Versions, func(a, b apiextensionsv1.CustomResourceDefinitionVersion) int {
		return slices.Index(order, a.Name) - slices.Index(order, b.Name)
	})
	return &crd
}

// TestGuardedTrim runs hack/trim-stored-versions on Loggers written while
// the CRD had v1 only: after a checkpoint, one Logger is written again (so
// stored as v2) and one is not (still v1, as etcd shows). The trim refuses
// and names the second; once it too is written, the trim sets
// status.storedVersions to [v2].
func TestGuardedTrim(t *testing.T) {
	withCluster(t, "the guarded trim of status.storedVersions", func(t *testing.T, cfg *envconf.Config) {
		w := harness.NewWorld(t, cfg, "a3-trim", modulePackage)
		ctx := context.Background()
		crds, err := apiextensionsclient.NewForConfig(w.C.Config)
		if err != nil {
			t.Fatal(err)
		}
		if err := deleteCRD(ctx, crds, loggerCRD); err != nil {
			t.Fatalf("deleting the Logger CRD: %v", err)
		}
		t.Cleanup(func() {
			if err := installCRDs(w.C.Config, packageConverter); err != nil {
				t.Errorf("installing the module's CRDs again: %v", err)
			}
		})
		if err := w.C.InstallCRDs(ctx, harness.RepoPath("advanced", "A2-admission-webhook", "config", "crd", "example.com_loggers.yaml")); err != nil {
			t.Fatalf("installing A2's Logger CRD: %v", err)
		}
		names := []string{"rewritten", "left"}
		for _, name := range names {
			w.Create(t, loggerGVR, harness.NewLogger(name, name, 2, 1))
		}
		if err := installCRDs(w.C.Config, packageConverter); err != nil {
			t.Fatalf("installing the module's CRD: %v", err)
		}

		bin := filepath.Join(t.TempDir(), "trim-stored-versions")
		if out, err := exec.Command("go", "build", "-o", bin, harness.RepoPath("advanced", "A3-api-versions", "hack", "trim-stored-versions")).CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		run := func(args ...string) (string, error) {
			out, err := exec.Command(bin, append([]string{"--kubeconfig", cfg.KubeconfigFile()}, args...)...).CombinedOutput()
			return strings.TrimSpace(string(out)), err
		}
		since, err := run("checkpoint")
		if err != nil {
			t.Fatalf("checkpoint: %v: %s", err, since)
		}
		rewrite := func(name string) {
			v2 := w.C.Dynamic.Resource(loggerV2).Namespace(w.NS)
			l, err := v2.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v2.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("a no-op update of %s: %v", name, err)
			}
		}
		rewrite("rewritten")
		expectStored(t, w.NS, []string{"rewritten"}, "example.com/v2")
		expectStored(t, w.NS, []string{"left"}, "example.com/v1")

		out, err := run("trim", since)
		if err == nil || !strings.Contains(out, "not trimmed: 1 Logger(s)") || !strings.Contains(out, w.NS+"/left ") {
			t.Fatalf("trim %s with %s/left stored as v1: %v: %s; want it refused, naming the Logger", since, w.NS, err, out)
		}
		t.Logf("trim, with one Logger not written since the checkpoint: %s", out)
		if got := loggerCRDNow(t, crds).Status.StoredVersions; !slices.Equal(got, []string{"v1", "v2"}) {
			t.Fatalf("status.storedVersions after a refused trim: %v, want [v1 v2]", got)
		}

		rewrite("left")
		expectStored(t, w.NS, names, "example.com/v2")
		if out, err := run("trim", since); err != nil {
			t.Fatalf("trim %s once every Logger is written: %v: %s", since, err, out)
		}
		if got := loggerCRDNow(t, crds).Status.StoredVersions; !slices.Equal(got, []string{"v2"}) {
			t.Fatalf("status.storedVersions after the trim: %v, want [v2]", got)
		}
	})
}

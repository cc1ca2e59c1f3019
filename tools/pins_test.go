// Package tools holds the pinned versions of every binary the repository
// builds (versions.mk) and the modules that build them (kube/, etcd/).
package tools

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// pins reads the NAME := value lines of versions.mk.
func pins(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("versions.mk")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([A-Z_]+)\s*:=\s*(\S+)\s*$`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// TestModulesMatchPins fails when a build module requires another version
// than versions.mk says, so that the one place to change a version really is
// the only one.
func TestModulesMatchPins(t *testing.T) {
	p := pins(t)
	for _, tc := range []struct{ pin, gomod, module string }{
		{"KUBE_VERSION", "kube/go.mod", "k8s.io/kubernetes"},
		{"ETCD_VERSION", "etcd/go.mod", "go.etcd.io/etcd/server/v3"},
	} {
		b, err := os.ReadFile(tc.gomod)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(tc.module) + `\s+(v\S+)`)
		m := re.FindStringSubmatch(string(b))
		if m == nil {
			t.Errorf("%s does not require %s", tc.gomod, tc.module)
			continue
		}
		if m[1] != p[tc.pin] {
			t.Errorf("%s requires %s %s, but versions.mk says %s=%s", tc.gomod, tc.module, m[1], tc.pin, p[tc.pin])
		}
	}
}

// TestStagingModulesMatchKube checks that every k8s.io staging module that
// tools/kube replaces is pinned to the v0.x twin of KUBE_VERSION.
func TestStagingModulesMatchKube(t *testing.T) {
	want := "v0" + strings.TrimPrefix(pins(t)["KUBE_VERSION"], "v1")
	b, err := os.ReadFile("kube/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^\s*(k8s\.io/\S+) => \S+ (v\S+)$`).FindAllStringSubmatch(string(b), -1) {
		n++
		if m[2] != want {
			t.Errorf("kube/go.mod replaces %s with %s, want %s", m[1], m[2], want)
		}
	}
	if n < 30 {
		t.Errorf("kube/go.mod has %d staging replace directives, want all of them (30+)", n)
	}
}

// TestKwokctlConfigMatchesPin: kwokctl picks component flags by kubeVersion.
func TestKwokctlConfigMatchesPin(t *testing.T) {
	b, err := os.ReadFile("../cluster/kwokctl.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := "kubeVersion: " + pins(t)["KUBE_VERSION"]
	if !strings.Contains(string(b), want) {
		t.Errorf("cluster/kwokctl.yaml does not say %q", want)
	}
}

// TestKindNodeImageMatchesPin: the kind cluster runs the kwok cluster's
// Kubernetes minor, from an image pinned by digest (a tag can be moved).
func TestKindNodeImageMatchesPin(t *testing.T) {
	p := pins(t)
	m := regexp.MustCompile(`^kindest/node:(v\d+\.\d+)\.\d+@sha256:[0-9a-f]{64}$`).FindStringSubmatch(p["KIND_NODE_IMAGE"])
	if m == nil {
		t.Fatalf("KIND_NODE_IMAGE=%q: want kindest/node:vX.Y.Z@sha256:<digest>", p["KIND_NODE_IMAGE"])
	}
	if kube := p["KUBE_VERSION"]; !strings.HasPrefix(kube, m[1]+".") {
		t.Errorf("KIND_NODE_IMAGE is Kubernetes %s, but KUBE_VERSION is %s: the two clusters must share a minor", m[1], kube)
	}
}

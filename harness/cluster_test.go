package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKindClusterSettings: the harness's private kind clusters get what
// cluster.sh gives the workshop's: the pinned node image and cluster/kind.yaml.
func TestKindClusterSettings(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	image, err := pin(root, "KIND_NODE_IMAGE")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(image, "kindest/node:") || !strings.Contains(image, "@sha256:") {
		t.Errorf("KIND_NODE_IMAGE=%q: want a kindest/node image pinned by digest", image)
	}
	t.Setenv("CLUSTER", "kind")
	config, err := clusterConfig(root, "unit-test")
	if err != nil {
		t.Fatalf("the kind config the harness passes: %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(config); err != nil {
			t.Error(err)
		}
	})
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	// kind would resolve a relative hostPath from the test's package.
	if want := "hostPath: " + root + "/cluster/audit-policy.yaml"; !strings.Contains(string(b), want) {
		t.Errorf("the kind config the harness passes has no %q line", want)
	}
}

// TestStateIsPrivate: a private cluster's kubeconfig (kwokctl and kind write
// it into .state) embeds the admin client key, so newProvider makes .state
// this account's only, also where it was there already with the usual 0755.
func TestStateIsPrivate(t *testing.T) {
	root := t.TempDir()
	for _, b := range []string{"kwokctl", "kwok", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"} {
		if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "bin", b), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(root, ".state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o755); err != nil { // whatever the test's umask
		t.Fatal(err)
	}
	// newProvider sets these for kwokctl; t.Setenv puts them back afterwards.
	for _, name := range []string{"CLUSTER", "KUBECONFIG", "PATH", "KWOK_WORKDIR", "KWOK_KUBE_APISERVER_BINARY",
		"KWOK_KUBE_CONTROLLER_MANAGER_BINARY", "KWOK_KUBE_SCHEDULER_BINARY", "KWOK_KUBECTL_BINARY",
		"KWOK_ETCD_BINARY", "KWOK_CONTROLLER_BINARY", "KWOK_KUBE_AUDIT_POLICY"} {
		t.Setenv(name, os.Getenv(name))
	}
	t.Setenv("CLUSTER", "kwok")
	if _, _, err := newProvider(root); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(state)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o700 {
		t.Errorf(".state is %#o after newProvider, want 0700: it holds the clusters' admin credentials", got)
	}
}

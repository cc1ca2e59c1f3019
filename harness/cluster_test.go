package harness

import (
	"os"
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

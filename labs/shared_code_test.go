package labs

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// sharedFiles are the files the stages carry over unchanged, because no
// stage's concept touches them: the desired Deployment, its drift check and
// its repair patch (from 03 on, where the Logger has a Go type), and 03's
// API registration in 04. make diff-N shows them with no change but their
// package line and import paths; this test keeps it that way.
var sharedFiles = [][]string{
	{
		"03-informer-cache/deployment.go",
		"04-workqueue/deployment.go",
		"05-controller-runtime/internal/controller/deployment.go",
		"06-status-and-owners/internal/controller/deployment.go",
	},
	{"03-informer-cache/api/example/v1/register.go", "04-workqueue/api/example/v1/register.go"},
	{"03-informer-cache/api/flights/v1/register.go", "04-workqueue/api/flights/v1/register.go"},
	{"03-informer-cache/api/example/v1/types.go", "04-workqueue/api/example/v1/types.go"},
	{"03-informer-cache/api/flights/v1/types.go", "04-workqueue/api/flights/v1/types.go"},
}

var (
	packageLine = regexp.MustCompile(`(?m)^package \w+$`)
	stagePath   = regexp.MustCompile(`operator-flow/0[1-6]-[a-z-]+/`)
)

// TestSharedCodeStaysTheSame fails when a file that a stage inherits differs
// from the previous stage's in more than its package line and import paths.
func TestSharedCodeStaysTheSame(t *testing.T) {
	for _, group := range sharedFiles {
		first := normalised(t, group[0])
		for _, path := range group[1:] {
			if normalised(t, path) != first {
				t.Errorf("%s differs from %s in more than its package line and import paths; "+
					"a stage changes shared code only where its concept needs it. See: diff %s %s",
					path, group[0], filepath.Join("..", group[0]), filepath.Join("..", path))
			}
		}
	}
}

func normalised(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	s := packageLine.ReplaceAllString(string(b), "package STAGE")
	return stagePath.ReplaceAllString(s, "operator-flow/STAGE/")
}

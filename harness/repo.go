package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

const rootModule = "module github.com/operator-flow/operator-flow\n"

var (
	rootOnce sync.Once
	rootDir  string
	rootErr  error
)

// RepoRoot is the repository's top folder: the nearest parent of the working
// directory whose go.mod declares the root module. Tests run in their package
// folder, so this is how they find ./bin, .state and the stage folders.
func RepoRoot() (string, error) {
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			rootErr = err
			return
		}
		for {
			b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
			if err == nil && strings.HasPrefix(string(b), rootModule) {
				rootDir = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				rootErr = fmt.Errorf("no go.mod declaring %q above the working directory", strings.TrimSpace(rootModule))
				return
			}
			dir = parent
		}
	})
	return rootDir, rootErr
}

// RepoPath joins path elements onto the repository root.
func RepoPath(elem ...string) string {
	root, err := RepoRoot()
	if err != nil {
		panic(err)
	}
	return filepath.Join(append([]string{root}, elem...)...)
}

package labs

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestModuleCopiesStayInStep holds every day-two module of
// advanced/bases.txt to its base: a file the module has at its base's path,
// tests included, is the base's, after diff.sh's normalisation of stage
// names, unless the module's order file, diff-order/<module>.txt, lists it
// as a file the module changes. A fix made in the base and not in the
// module's copy fails here. diff.sh decides what differs: it runs with
// TESTS=1, and every file it shows as changed in place (neither new, nor
// deleted, nor moved) must be listed.
func TestModuleCopiesStayInStep(t *testing.T) {
	t.Setenv("TESTS", "1")
	t.Setenv("COLOR", "")
	for _, m := range modules(t) {
		t.Run(m.id, func(t *testing.T) {
			orderFile := "diff-order/" + m.id + ".txt"
			listed, _ := readOrder(t, orderFile)
			cmd := exec.Command("bash", "diff.sh", m.id)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("diff.sh %s: %v", m.id, err)
			}
			for _, f := range changedInPlace(string(out)) {
				if !slices.Contains(listed, f) {
					t.Errorf("%s differs from %s's copy after normalisation, and %s does not list it as changed: "+
						"bring the copy in step with %s (make diff-%s TESTS=1 shows the difference), or list it if %s changes it",
						f, m.base, orderFile, m.base, m.id, m.id)
				}
			}
		})
	}
}

// changedInPlace reads diff.sh's output: the paths of the files it shows
// as changed at the same path on both sides. git marks a file only one
// side has with "new file mode" or "deleted file mode", and a moved one
// with two different paths.
func changedInPlace(diff string) []string {
	var changed []string
	path := "" // the file of the block being read, while it may be changed in place
	for line := range strings.SplitSeq(diff, "\n") {
		switch f := strings.Fields(line); {
		case strings.HasPrefix(line, "diff --git ") && len(f) == 4:
			if path != "" {
				changed = append(changed, path)
			}
			path = ""
			if a, b := strings.TrimPrefix(f[2], "a/"), strings.TrimPrefix(f[3], "b/"); a == b {
				path = b
			}
		case strings.HasPrefix(line, "new file mode "), strings.HasPrefix(line, "deleted file mode "):
			path = ""
		}
	}
	if path != "" {
		changed = append(changed, path)
	}
	return changed
}

// module is a day-two module and its base, as advanced/bases.txt names them.
type module struct{ id, base string }

// modules reads advanced/bases.txt: "A1 06-status-and-owners" a line,
// comments and blank lines aside.
func modules(t *testing.T) []module {
	t.Helper()
	b, err := os.ReadFile("../advanced/bases.txt")
	if err != nil {
		t.Fatal(err)
	}
	var ms []module
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			ms = append(ms, module{f[0], f[1]})
		}
	}
	if len(ms) == 0 {
		t.Fatal("advanced/bases.txt names no module")
	}
	return ms
}

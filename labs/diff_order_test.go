package labs

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestDiffOrder runs diff.sh N for every stage from 2 and every day-two
// module of advanced/bases.txt, the way make diff-N does, and holds it to
// its order file, diff-order/NN.txt: the file lists exactly the files the
// diff shows (none missing, none stale), the diff shows them in that order,
// the Go comes before everything else, and the summary names the first file
// of every "## " part. The base's tests a module changes are listed too,
// for TestModuleCopiesStayInStep; the diff shows no test without TESTS=1.
func TestDiffOrder(t *testing.T) {
	t.Setenv("TESTS", "")
	t.Setenv("COLOR", "")
	ids := []string{"2", "3", "4", "5", "6"}
	for _, m := range modules(t) {
		ids = append(ids, m.id)
	}
	isTest := func(f string) bool { return strings.HasSuffix(f, "_test.go") }
	for _, n := range ids {
		t.Run("diff-"+n, func(t *testing.T) {
			file := n
			if len(n) == 1 {
				file = "0" + n
			}
			orderFile := "diff-order/" + file + ".txt"
			listed, parts := readOrder(t, orderFile)
			listed = slices.DeleteFunc(listed, isTest)
			parts = slices.DeleteFunc(parts, func(p string) bool {
				first, _, _ := strings.Cut(strings.TrimPrefix(p, "from "), ": ")
				return isTest(first)
			})
			cmd := exec.Command("bash", "diff.sh", n)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("diff.sh %s: %v", n, err)
			}
			var shown []string
			for _, line := range strings.Split(string(out), "\n") {
				// diff --git a/OLD b/NEW: git orders a pair by NEW, which is
				// the old name again for a deleted file.
				if f := strings.Fields(line); strings.HasPrefix(line, "diff --git ") && len(f) == 4 {
					shown = append(shown, strings.TrimPrefix(f[3], "b/"))
				}
			}
			for _, f := range shown {
				if !slices.Contains(listed, f) {
					t.Errorf("diff-%s shows %s, which %s does not list: add it where the stage's README walks it", n, f, orderFile)
				}
			}
			for _, f := range listed {
				if !slices.Contains(shown, f) {
					t.Errorf("%s lists %s, which diff-%s does not show: remove it", orderFile, f, n)
				}
			}
			if !t.Failed() && !slices.Equal(shown, listed) {
				t.Errorf("diff-%s shows its files in this order:\n%s\nnot in %s's:\n%s", n, strings.Join(shown, "\n"), orderFile, strings.Join(listed, "\n"))
			}
			isGo := func(f string) bool { return strings.HasSuffix(f, ".go") }
			other := slices.IndexFunc(shown, func(f string) bool { return !isGo(f) })
			// A module without Go of its own (A1) shows none.
			if len(shown) == 0 || other == 0 && slices.ContainsFunc(shown, isGo) || other > 0 && slices.ContainsFunc(shown[other:], isGo) {
				t.Errorf("diff-%s must show its Go first, and only then the rest; it shows: %s", n, strings.Join(shown, ", "))
			}
			for _, p := range parts {
				if !strings.Contains(string(out), p) {
					t.Errorf("diff-%s's summary does not say where a part of %s starts: no line %q", n, orderFile, p)
				}
			}
			if n == "2" && strings.Contains(string(out), "deleted file mode") {
				t.Errorf("diff-2 shows files of 01 as deleted; 02 still uses 01's YAML from 01's folder")
			}
		})
	}
}

// readOrder reads an order file: its paths, in order, and for every "## "
// part the summary line diff.sh prints for it ("from FIRST: TITLE").
func readOrder(t *testing.T, path string) (paths, parts []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	title := ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			title = strings.TrimPrefix(line, "## ")
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			paths = append(paths, line)
			if title != "" {
				parts = append(parts, fmt.Sprintf("from %s: %s\n", line, title))
				title = ""
			}
		}
	}
	return paths, parts
}

package labs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLearnerWords is what a workshop day can read besides doing the labs:
// the README, docs/concepts.md, the labs and the stage READMEs. The rest of
// docs/ is reference, read when a lab links to it. Day two (the modules'
// labs and READMEs) is another day, with a budget of its own.
const (
	maxLearnerWords = 22000
	maxDayTwoWords  = 11000
)

// TestLearnerPathFitsADay counts the learner path's words as `wc -w` does
// (runs of non-space), code blocks, tables and diagrams included: a learner
// reads those too.
func TestLearnerPathFitsADay(t *testing.T) {
	paths := []string{"../README.md", "../docs/concepts.md"}
	for _, glob := range []string{"0[1-9]-*.md", "README.md", "../0[1-9]-*/README.md"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	total := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n := len(strings.Fields(string(b)))
		t.Logf("%6d  %s", n, display(p))
		total += n
	}
	// README, concepts, labs/README.md, six labs, six stage READMEs.
	if len(paths) != 15 {
		t.Errorf("counted %d files, want 15: %v", len(paths), paths)
	}
	t.Logf("%6d  in all (at most %d)", total, maxLearnerWords)
	if total > maxLearnerWords {
		t.Errorf("the learner path is %d words, over the %d a workshop day can read: shorten it, or move reference material to docs/ and link it", total, maxLearnerWords)
	}
}

// TestDayTwoFitsADay counts day two's words the same way: each module's
// lab and README.
func TestDayTwoFitsADay(t *testing.T) {
	var paths []string
	for _, glob := range []string{"A[0-9]-*.md", "../advanced/A[0-9]-*/README.md"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	total := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n := len(strings.Fields(string(b)))
		t.Logf("%6d  %s", n, display(p))
		total += n
	}
	if len(paths) < 2 {
		t.Errorf("counted %d files, want a lab and a README per module: %v", len(paths), paths)
	}
	t.Logf("%6d  in all (at most %d)", total, maxDayTwoWords)
	if total > maxDayTwoWords {
		t.Errorf("day two is %d words, over the %d a workshop day can read: shorten it, or move reference material to docs/ and link it", total, maxDayTwoWords)
	}
}

// display is a path as seen from the repository root.
func display(p string) string {
	if rest, ok := strings.CutPrefix(p, "../"); ok {
		return rest
	}
	return "labs/" + p
}

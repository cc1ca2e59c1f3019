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
// labs and READMEs) is another day, with a budget of its own: more than
// day one's share per module, because each module also says where its
// guard stops (what a narrowed account can still do, what a conversion or
// a migration can lose), which a reader copying it needs.
const (
	maxLearnerWords = 22000
	maxDayTwoWords  = 12500
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
		dayOne, _ := splitDays(string(b))
		n := len(strings.Fields(dayOne))
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
// lab and README, and the day-two sections of docs/concepts.md.
func TestDayTwoFitsADay(t *testing.T) {
	paths := []string{"../docs/concepts.md"}
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
		text := string(b)
		if p == "../docs/concepts.md" {
			_, text = splitDays(text)
		}
		n := len(strings.Fields(text))
		t.Logf("%6d  %s", n, display(p))
		total += n
	}
	if len(paths) < 3 {
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

// The markers around docs/concepts.md's day-two sections.
const (
	dayTwoStart = "<!-- day two:"
	dayTwoEnd   = "<!-- end of day two -->"
)

// splitDays splits a text into what day one reads and the day-two sections
// between the markers (none, in a file without them).
func splitDays(text string) (dayOne, dayTwo string) {
	start := strings.Index(text, dayTwoStart)
	if start < 0 {
		return text, ""
	}
	rest := text[start:]
	end := strings.Index(rest, dayTwoEnd)
	if end < 0 {
		return text[:start], rest
	}
	end += len(dayTwoEnd)
	return text[:start] + rest[end:], rest[:end]
}

// TestSplitDays: the day-two sections, markers included, go to day two;
// the rest, on both sides, stays in day one.
func TestSplitDays(t *testing.T) {
	one, two := splitDays("a b\n" + dayTwoStart + " why -->\nc d\n" + dayTwoEnd + "\ne")
	if strings.Join(strings.Fields(one), " ") != "a b e" || !strings.Contains(two, "c d") {
		t.Fatalf("splitDays: day one %q, day two %q", one, two)
	}
	if one, two := splitDays("a b"); one != "a b" || two != "" {
		t.Fatalf("splitDays without markers: %q, %q", one, two)
	}
}

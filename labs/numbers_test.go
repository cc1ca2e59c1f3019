// Package labs holds the tests that keep the course's figures honest: every
// count the README and the stage READMEs give about the code is computed
// here from the code, so a change to a stage cannot leave a stale number.
package labs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// codeLines counts a stage's hand-written Go: files that are not tests, not
// in e2e/ or hack/, and not generated (generated/, zz_generated*), and in
// them the lines that are neither blank nor comments.
func codeLines(t *testing.T, stage string) (files, lines int) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join("..", stage), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "e2e", "hack", "generated":
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated") {
			return nil
		}
		files++
		lines += countCode(t, path, "//")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, lines
}

// countCode counts the lines of a file that are neither blank nor a comment
// (a line starting with the comment marker, or inside a /* */ block).
func countCode(t *testing.T, path, comment string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	}()
	n, block := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case block:
			block = !strings.Contains(l, "*/")
		case l == "", strings.HasPrefix(l, comment):
		case comment == "//" && strings.HasPrefix(l, "/*"):
			block = !strings.Contains(l, "*/")
		default:
			n++
		}
	}
	return n
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The README's stage table gives each stage's hand-written size.
func TestStageSizes(t *testing.T) {
	readme := read(t, "README.md")
	yaml := 0
	crds, _ := filepath.Glob("../01-crd-yaml/crds/*.yaml")
	for _, f := range crds {
		yaml += countCode(t, f, "#")
	}
	want := map[string]string{"01-crd-yaml": fmt.Sprintf("%d lines of YAML", yaml)}
	for _, stage := range []string{"02-raw-watch", "03-informer-cache", "04-workqueue", "05-controller-runtime", "06-status-and-owners"} {
		files, lines := codeLines(t, stage)
		want[stage] = fmt.Sprintf("%d files, %d lines", files, lines)
	}
	for stage, w := range want {
		row := regexp.MustCompile(`(?m)^\| \[` + stage + `\].*\|$`).FindString(readme)
		if !strings.Contains(row, "| "+w) {
			t.Errorf("README.md: the row of %s must end with %q (computed from the code); it is:\n%s", stage, w+" |", row)
		}
	}
}

// The number of invalid objects is the number of files in
// 01-crd-yaml/invalid, wherever a document gives it.
func TestInvalidObjectCount(t *testing.T) {
	files, _ := filepath.Glob("../01-crd-yaml/invalid/*.yaml")
	n := fmt.Sprint(len(files))
	for path, re := range map[string]string{
		"docs/testing.md":       `(\d+) invalid objects`,
		"01-crd-yaml/README.md": `All (\d+) files`,
	} {
		m := regexp.MustCompile(re).FindAllStringSubmatch(read(t, path), -1)
		if len(m) == 0 {
			t.Errorf("%s no longer says %q; update this test", path, re)
		}
		for _, g := range m {
			if g[1] != n {
				t.Errorf("%s says %q; 01-crd-yaml/invalid holds %s files", path, g[0], n)
			}
		}
	}
}

// The instructors' plans give each lab and exercise the time its lab gives
// it, and every row starts when the one before ends.
func TestInstructorPlans(t *testing.T) {
	labTime := regexp.MustCompile(`(?m)^Time: (\d+) minutes, plus (\d+) for the exercise\.`)
	lab, exercise := map[string]string{}, map[string]string{}
	labs, _ := filepath.Glob("0[1-6]-*.md")
	if len(labs) != 6 {
		t.Fatalf("labs: %v", labs)
	}
	for _, f := range labs {
		m := labTime.FindStringSubmatch(read(t, "labs/"+f))
		if m == nil {
			t.Errorf("labs/%s has no line %q", f, "Time: N minutes, plus M for the exercise.")
			continue
		}
		n := strings.TrimLeft(f[:2], "0")
		lab[n], exercise[n] = m[1], m[2]
	}
	doc := read(t, "docs/instructors.md")
	row := regexp.MustCompile(`(?m)^\| (\d+):(\d\d) \| (.*) \|$`)
	part := regexp.MustCompile(`(lab|exercise) (\d) \((\d+) min\)|\((\d+) min\)`)
	plans := strings.Split(doc, "\n**")[1:]
	if len(plans) < 2 {
		t.Fatal("docs/instructors.md: no half-day and full-day plans found")
	}
	for _, plan := range plans {
		title, _, _ := strings.Cut(plan, "\n")
		next := -1 // when the previous row ends, in minutes
		for _, m := range row.FindAllStringSubmatch(plan, -1) {
			h, _ := strconv.Atoi(m[1]) // the regexp matched digits
			min, _ := strconv.Atoi(m[2])
			start := 60*h + min
			if next >= 0 && start != next {
				t.Errorf("docs/instructors.md, %s: the row at %s:%s starts at minute %d, but the row before ends at minute %d", title, m[1], m[2], start, next)
			}
			next = start
			for _, p := range part.FindAllStringSubmatch(m[3], -1) {
				minutes := p[3] + p[4]
				d, _ := strconv.Atoi(minutes)
				next += d
				want := map[string]map[string]string{"lab": lab, "exercise": exercise}[p[1]]
				if want != nil && want[p[2]] != minutes {
					t.Errorf("docs/instructors.md, %s: %s %s takes %s min; its lab says %s", title, p[1], p[2], minutes, want[p[2]])
				}
			}
		}
		if next < 0 {
			t.Errorf("docs/instructors.md, %s: no timed rows", title)
		}
	}
}

// The README is the course's front page: what it teaches and where to
// start. Benchmarks and reference tables live in their own documents.
func TestReadmeIsAFrontPage(t *testing.T) {
	if n := len(read(t, "README.md")); n > 10*1024 {
		t.Errorf("README.md has %d bytes; keep it a course page of at most 10 KB and move reference material to docs/ or bench/", n)
	}
}

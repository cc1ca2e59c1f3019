// Package docs holds the tests that keep the course's words tied to its code:
// every excerpt of code, config or output in a README, lab or doc names the
// file it comes from and is found there (quotes_test.go); every identifier,
// path, make target and flag written in backticks exists (names_test.go);
// every "step N" a doc points to is a numbered step comment in the code
// (steps_test.go). They read files only: no cluster, no network.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// root is the repository, seen from this package's folder.
const root = ".."

// A doc is one Markdown file, split into fenced blocks and the inline code
// spans of its prose.
type doc struct {
	path   string // relative to the repository, with forward slashes
	stage  string // the stage folder the doc is about ("" for a general doc)
	blocks []block
	spans  []span
	prose  []string // the lines outside fenced blocks and HTML comments
}

// A block is one fenced code block and the marker on the line before it.
type block struct {
	line   int      // 1-based line of the opening fence
	lang   string   // the word after the fence: sh, console, text, go, ...
	body   []string // the lines between the fences
	marker string   // "quote", "tree", "example" or "output"; "" when there is none
	arg    string   // the marker's argument: a path, or the example's reason
}

// A span is one `inline code` span in the prose.
type span struct {
	line int
	text string
}

// markerRE reads the comment that says where a block comes from:
//
//	<!-- quote: PATH -->       the block's lines are in PATH, in this order
//	<!-- tree: DIR -->         the block is a file tree of DIR
//	<!-- example: REASON -->   the block is written for the doc and quotes no file
//	<!-- output: REASON -->    the block is what a command printed once; the
//	                           reason says which command, and what checks it
var markerRE = regexp.MustCompile(`^<!-- (quote|tree|example|output): (.+?) -->$`)

var spanRE = regexp.MustCompile("`([^`]+)`")

// stageDirs are the six stage folders, in course order.
var stageDirs = []string{"01-crd-yaml", "02-raw-watch", "03-informer-cache", "04-workqueue", "05-controller-runtime", "06-status-and-owners"}

// stageOf names the stage a doc is about: its own folder for a stage README,
// stage N for lab N, the module's folder for a day-two module's README and
// lab, none for the rest.
func stageOf(path string) string {
	for _, s := range stageDirs {
		if strings.HasPrefix(path, s+"/") || path == "labs/"+s+".md" {
			return s
		}
	}
	if m := moduleRE.FindStringSubmatch(path); m != nil {
		return "advanced/" + m[1]
	}
	return ""
}

// moduleRE reads a day-two module's folder from its README's or lab's path.
var moduleRE = regexp.MustCompile(`^(?:advanced/|labs/)(A\d+-[a-z0-9-]+)(?:/|\.md$)`)

// readDoc splits a Markdown file into blocks, spans and prose.
func readDoc(t *testing.T, path string) doc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	d := doc{path: path, stage: stageOf(path)}
	lines := strings.Split(string(b), "\n")
	marker, arg, markerLine := "", "", 0
	inComment := false
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if m := markerRE.FindStringSubmatch(line); m != nil {
			marker, arg, markerLine = m[1], m[2], i+1
			continue
		}
		if strings.HasPrefix(line, "```") {
			bl := block{line: i + 1, lang: strings.TrimPrefix(line, "```"), marker: marker, arg: arg}
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				bl.body = append(bl.body, lines[i])
			}
			if i == len(lines) {
				t.Errorf("%s:%d: a fenced block is never closed", path, bl.line)
			}
			d.blocks = append(d.blocks, bl)
			marker, markerLine = "", 0
			continue
		}
		// A marker belongs to the next block; only the labs' doc-test
		// markers may stand between the two.
		if markerLine != 0 && line != "" && !strings.HasPrefix(line, "<!-- doc-test:") {
			t.Errorf("%s:%d: a %q marker must come just before a fenced block", path, markerLine, marker)
			marker, markerLine = "", 0
		}
		// HTML comments (doc-test markers, maintainers' notes) are not prose.
		if inComment || strings.HasPrefix(line, "<!--") {
			inComment = !strings.Contains(line, "-->")
			continue
		}
		d.prose = append(d.prose, lines[i])
		for _, m := range spanRE.FindAllStringSubmatch(lines[i], -1) {
			d.spans = append(d.spans, span{line: i + 1, text: m[1]})
		}
	}
	return d
}

// allDocs lists every Markdown file of the repository that people read:
// generated reports (bench/results/) and learners' copies (workspace/) are
// not among them.
func allDocs(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			switch rel {
			case ".git", ".state", "bin", "workspace", "bench/results":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".md") {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// isLab says whether a doc is a lab, whose sh, console and text blocks
// labs/e2e runs and compares (labs/e2e/docs_test.go).
func isLab(path string) bool {
	return (strings.HasPrefix(path, "labs/0") || strings.HasPrefix(path, "labs/A")) && strings.HasSuffix(path, ".md")
}

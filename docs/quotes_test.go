package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryBlockSaysWhereItComesFrom fails on a fenced block that neither
// names its source nor is checked some other way. A block is checked when:
//   - it is a Mermaid diagram (a picture of the flow, not a quote);
//   - it is an sh, console or text block of a lab: labs/e2e runs the
//     commands and compares their output (labs/e2e/docs_test.go);
//   - it is an sh block outside the labs: commands to type, no output
//     (TestNamesInBackticksExist checks their make targets);
//   - a marker before it says where it comes from (see markerRE).
func TestEveryBlockSaysWhereItComesFrom(t *testing.T) {
	for _, p := range allDocs(t) {
		d := readDoc(t, p)
		for _, b := range d.blocks {
			switch {
			case b.marker != "":
			case b.lang == "mermaid":
			case isLab(p) && (b.lang == "sh" || b.lang == "console" || b.lang == "text"):
			case b.lang == "sh" && !hasOutput(b):
			default:
				t.Errorf("%s:%d: a ```%s block says neither where it comes from nor why it quotes no file: put <!-- quote: FILE -->, <!-- tree: DIR -->, <!-- output: REASON --> or <!-- example: REASON --> before it", p, b.line, b.lang)
			}
		}
	}
}

// hasOutput says whether an sh block holds output besides its commands: the
// sh blocks outside the labs hold commands only, and comments.
func hasOutput(b block) bool {
	for _, l := range b.body {
		if strings.HasPrefix(strings.TrimSpace(l), "$ ") {
			return true
		}
	}
	return false
}

// TestQuotesMatchTheirFiles checks every <!-- quote: FILE --> block against
// FILE (or FILE1 FILE2 ..., read as one): each line of the block is a line
// of the file, in the same order.
// Leading and trailing spaces do not count, nor do blank lines, and "..."
// or "…" in a block's line stands for text the doc leaves out (a line of
// its own: any number of lines). A diff block quotes two files, "FROM TO":
// its - lines are in FROM, its + lines in TO, and the rest in both.
func TestQuotesMatchTheirFiles(t *testing.T) {
	for _, p := range allDocs(t) {
		for _, b := range readDoc(t, p).blocks {
			if b.marker != "quote" {
				continue
			}
			files := strings.Fields(b.arg)
			if b.lang == "diff" {
				if len(files) != 2 {
					t.Errorf("%s:%d: a diff block quotes two files, FROM TO; the marker names %q", p, b.line, b.arg)
					continue
				}
				var from, to []string
				for _, l := range b.body {
					switch {
					case strings.HasPrefix(l, "-"):
						from = append(from, l[1:])
					case strings.HasPrefix(l, "+"):
						to = append(to, l[1:])
					default:
						from, to = append(from, l), append(to, l)
					}
				}
				checkQuote(t, p, b.line, files[0], from)
				checkQuote(t, p, b.line, files[1], to)
				continue
			}
			checkQuote(t, p, b.line, b.arg, b.body)
		}
	}
}

// checkQuote finds quote in the files (one after the other, as if they were
// one). A console block's "$ " lines are commands, not found in a source
// file: they are left out, unless the source is a lab, which has them too.
// A comment marker (#, //) before a source line does not count, so that a
// YAML file's header comment can be quoted as the output it documents.
func checkQuote(t *testing.T, doc string, line int, files string, quote []string) {
	t.Helper()
	var src []string
	lab := false
	for _, file := range strings.Fields(files) {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Errorf("%s:%d: the block quotes %s, which cannot be read: %v", doc, line, file, err)
			return
		}
		lab = lab || strings.HasSuffix(file, ".md")
		for _, l := range strings.Split(string(b), "\n") {
			src = append(src, commentRE.ReplaceAllString(strings.TrimSpace(l), ""))
		}
	}
	if lab {
		// Output quoted from a lab: labs/e2e runs the lab and compares it.
		// Times, pids, ages and resourceVersions differ from run to run, so
		// numbers are not compared, nor a console's "$ " prompt.
		quote, src = withoutNumbers(quote), withoutNumbers(src)
	} else {
		out := []string{}
		for _, q := range quote {
			if !strings.HasPrefix(strings.TrimSpace(q), "$ ") {
				out = append(out, q)
			}
		}
		quote = out
	}
	for i, q := range quote {
		quote[i] = commentRE.ReplaceAllString(strings.TrimSpace(q), "")
	}
	if missing := unquoted(quote, src); missing != "" {
		t.Errorf("%s:%d: this line of the block is not in %s (after the lines before it):\n\t%s", doc, line, files, missing)
	}
}

// commentRE is a comment marker at the start of a source line.
var commentRE = regexp.MustCompile(`^(#|//) ?`)

// withoutNumbers writes every run of digits as 0 and drops a "$ " prompt.
func withoutNumbers(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		l = strings.TrimPrefix(strings.TrimSpace(l), "$ ")
		out[i] = digitsRE.ReplaceAllString(l, "0")
	}
	return out
}

var digitsRE = regexp.MustCompile(`[0-9]+`)

// unquoted returns the first line of quote that is not found in src after
// the lines matched before it, or "" when all are.
func unquoted(quote, src []string) string {
	at := 0
	for _, q := range quote {
		q = strings.TrimSpace(q)
		if q == "" || q == "..." || q == "…" {
			continue
		}
		re := elided(q)
		found := false
		for ; at < len(src); at++ {
			if re.MatchString(strings.TrimSpace(src[at])) {
				found = true
				at++
				break
			}
		}
		if !found {
			return q
		}
	}
	return ""
}

// elided turns a quoted line into a pattern: "..." and "…" match any text,
// and runs of spaces match any run of spaces (tables get realigned).
func elided(q string) *regexp.Regexp {
	parts := ellipsisRE.Split(q, -1)
	for i, part := range parts {
		parts[i] = spacesRE.ReplaceAllString(regexp.QuoteMeta(part), `\s+`)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

var (
	ellipsisRE = regexp.MustCompile(`\.\.\.|…`)
	spacesRE   = regexp.MustCompile(`[ \t]+`)
)

// TestTreesMatchTheFolders checks every <!-- tree: DIR --> block: each entry
// exists under DIR (a glob such as *_test.go matches something), and a
// function or method that a .go file's line names is declared in that file,
// when the stage's own code declares it at all.
func TestTreesMatchTheFolders(t *testing.T) {
	for _, p := range allDocs(t) {
		for _, b := range readDoc(t, p).blocks {
			if b.marker != "tree" {
				continue
			}
			for _, problem := range checkTree(t, b.arg, b.body) {
				t.Errorf("%s:%d: %s", p, b.line, problem)
			}
		}
	}
}

// treeLineRE splits a tree line into its indentation (the drawing), the
// entry, and what the doc says of it.
var treeLineRE = regexp.MustCompile(`^((?:[│ ]   )*)[├└]── (\S+)\s*(.*)$`)

var identRE = regexp.MustCompile(`\b[A-Za-z_][A-Za-z0-9_]*\b`)

func checkTree(t *testing.T, dir string, body []string) []string {
	var problems []string
	x := indexTree(t, dir)
	var parents []string // the folder of each depth
	for _, l := range body {
		m := treeLineRE.FindStringSubmatch(l)
		if m == nil {
			continue // the root line, or a line of the drawing
		}
		depth := len([]rune(m[1])) / 4
		if depth > len(parents) {
			problems = append(problems, fmt.Sprintf("tree line %q is deeper than its parent", l))
			continue
		}
		parents = parents[:depth]
		entry := strings.TrimSuffix(m[2], "/")
		rel := filepath.Join(append([]string{dir}, append(parents, entry)...)...)
		if strings.HasSuffix(m[2], "/") {
			parents = append(parents, entry)
		}
		matches, _ := filepath.Glob(filepath.Join(root, rel))
		if len(matches) == 0 {
			problems = append(problems, fmt.Sprintf("the tree lists %s, which does not exist", filepath.ToSlash(rel)))
			continue
		}
		if !strings.HasSuffix(entry, ".go") || strings.Contains(entry, "*") {
			continue
		}
		file := filepath.ToSlash(rel)
		for _, loc := range identRE.FindAllStringIndex(m[3], -1) {
			id := m[3][loc[0]:loc[1]]
			if strings.ToLower(id) == id && !strings.HasPrefix(m[3][loc[1]:], "(") {
				continue // a lower-case word is a name only when written as a call: enqueue()
			}
			files := funcFiles(x, id)
			if len(files) == 0 {
				continue
			}
			if !contains(files, file) {
				problems = append(problems, fmt.Sprintf("the tree puts %s in %s; it is declared in %s", id, file, strings.Join(files, ", ")))
			}
		}
	}
	return problems
}

// funcFiles are the files of a stage's own code (not tests, not generated)
// that declare a function or method of this name.
func funcFiles(x *goIndex, name string) []string {
	var out []string
	for key, f := range x.funcs {
		file := x.files[f]
		if key != name && !strings.HasSuffix(key, "."+name) || strings.HasSuffix(file, "_test.go") ||
			strings.Contains(file, "zz_generated") || strings.Contains(file, "/generated/") || contains(out, file) {
			continue
		}
		out = append(out, file)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

package docs

import (
	"fmt"
	"go/ast"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// stepRefRE finds where a doc points into the code by step: "`Reconcile`
// step 2", "steps 1-3 of `Reconcile`", "step 4 of `LoggerReconciler.Reconcile`".
var (
	stepBeforeRE = regexp.MustCompile("`([A-Za-z_.]+)(?:\\(\\))?` steps? (\\d+)(?:\\s*(?:-|–|to|and)\\s*(\\d+))?")
	stepAfterRE  = regexp.MustCompile("steps? (\\d+)(?:\\s*(?:-|–|to|and)\\s*(\\d+))? of `([A-Za-z_.]+)(?:\\(\\))?`")
	anyStepRE    = regexp.MustCompile(`(?i)\bsteps? \d`)
	// stepCommentRE is a numbered step in a function body: "// Step 2: ...".
	stepCommentRE = regexp.MustCompile(`^// Step (\d+):`)
)

// TestStepsPointToNumberedComments fails when a doc names "step N" of a
// function that has no "// Step N:" comment, and when a doc says "step N"
// without naming the function (a lab's own steps are numbered lists and
// headings, never "step N" in running text).
func TestStepsPointToNumberedComments(t *testing.T) {
	r := newResolver(t)
	for _, p := range allDocs(t) {
		d := readDoc(t, p)
		// A reference may break across lines: read the prose as one text.
		text := strings.Join(strings.Fields(strings.Join(d.prose, " ")), " ")
		covered := map[int]bool{}
		for _, re := range []*regexp.Regexp{stepBeforeRE, stepAfterRE} {
			for _, loc := range re.FindAllStringIndex(text, -1) {
				for i := loc[0]; i < loc[1]; i++ {
					covered[i] = true
				}
			}
		}
		for _, loc := range anyStepRE.FindAllStringIndex(text, -1) {
			inCode := strings.Count(text[:loc[0]], "`")%2 == 1 // `// Step 2:` quotes a comment
			if !covered[loc[0]] && !inCode {
				t.Errorf("%s: %q says step N without the function it is in: write \"`Func` step N\" or \"step N of `Func`\"", p, around(text, loc[0]))
			}
		}
		for _, ref := range stepRefs(text) {
			if problem := r.checkStep(d, ref.fn, ref.steps); problem != "" {
				t.Errorf("%s: step %v of `%s`: %s", p, ref.steps, ref.fn, problem)
			}
		}
	}
}

// around is the text near i, to say where a problem is.
func around(text string, i int) string {
	from, to := max(0, i-40), min(len(text), i+40)
	return text[from:to]
}

type stepRef struct {
	fn    string
	steps []int
}

func stepRefs(line string) []stepRef {
	var refs []stepRef
	add := func(fn, from, to string) {
		a, _ := strconv.Atoi(from)
		b := a
		if to != "" {
			b, _ = strconv.Atoi(to)
		}
		ref := stepRef{fn: fn}
		for n := a; n <= b; n++ {
			ref.steps = append(ref.steps, n)
		}
		refs = append(refs, ref)
	}
	for _, m := range stepBeforeRE.FindAllStringSubmatch(line, -1) {
		add(m[1], m[2], m[3])
	}
	for _, m := range stepAfterRE.FindAllStringSubmatch(line, -1) {
		add(m[3], m[1], m[2])
	}
	return refs
}

// checkStep finds fn in the doc's stage (a method may be written Type.Name)
// and its numbered step comments.
func (r *resolver) checkStep(d doc, fn string, steps []int) string {
	x := r.repo
	if d.stage != "" {
		x = r.stages[d.stage]
	}
	var found []int
	seen := map[*ast.FuncDecl]bool{}
	for key, f := range x.funcs {
		if key != fn && !strings.HasSuffix(key, "."+fn) || seen[f] {
			continue
		}
		seen[f] = true
		if f.Body == nil {
			continue
		}
		for _, cg := range fileComments(x, f) {
			for _, c := range cg.List {
				if c.Pos() < f.Body.Lbrace || c.End() > f.Body.Rbrace {
					continue
				}
				if m := stepCommentRE.FindStringSubmatch(c.Text); m != nil {
					n, _ := strconv.Atoi(m[1])
					found = append(found, n)
				}
			}
		}
	}
	decls := len(seen)
	if decls == 0 {
		return fmt.Sprintf("no function %s in %s", fn, orRepo(d.stage))
	}
	if decls > 1 {
		return fmt.Sprintf("%d functions are named %s in %s: write Type.%s", decls, fn, orRepo(d.stage), fn)
	}
	sort.Ints(found)
	for _, n := range steps {
		if !containsInt(found, n) {
			return fmt.Sprintf("%s has no \"// Step %d:\" comment (its steps: %v)", fn, n, found)
		}
	}
	return ""
}

func containsInt(list []int, n int) bool {
	for _, v := range list {
		if v == n {
			return true
		}
	}
	return false
}

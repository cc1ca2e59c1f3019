// Command exercise builds the starting point of lab N's exercise: stage N's
// operator with the functions that make up the stage's concept cut out, a
// TODO in each, and everything else (flags, Deployment shape, status
// messages, generated code) given. Stage N stays the reference solution.
//
//	go run ./labs/exercise 4                  (what `make exercise-4` runs)
//	>> workspace/04-workqueue: stage 04 with 5 functions to write:
//	   controller.go       Run
//	   ...
//
// Flags, for the tests of `make check-N`:
//
//	-dest DIR    write the copy to DIR instead of workspace/<stage folder>
//	-only NAME   cut only this one function (a copy with one bug in it); for
//	             a module's policies, only this file's CEL
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// module is the repository's Go module path; copies import their own
// packages (API types, generated clients) under their new path.
const module = "github.com/operator-flow/operator-flow"

// Concept lists, per stage, the functions a learner writes in lab N's
// exercise: "Name" for a function, "Type.Name" for a method. The lab's
// Exercise section names each of them (TestLabsNameTheFunctions).
var Concept = map[int][]string{
	// The watch loop: LIST, WATCH from the list's resourceVersion, resume
	// where a closed watch stopped, LIST again after 410 Gone; and one
	// handler that reads, compares and writes only a difference.
	2: {"stream.tryConnect", "stream.receive", "operator.syncTicket"},
	// Informers: the factories, handlers registered before Start, the wait
	// for the caches; and the handler that adapts them to the sync code.
	3: {"operator.run", "handler"},
	// The workqueue: workers, and how a key's outcome is told to the queue;
	// the handlers only queue keys.
	4: {"controller.Run", "controller.processNextWorkItem", "controller.enqueue", "operator.handleObject"},
	// controller-runtime: the builders that register the watches, and the
	// two Reconcile functions.
	5: {"FlightTicketReconciler.SetupWithManager", "FlightTicketReconciler.Reconcile", "LoggerReconciler.SetupWithManager", "LoggerReconciler.Reconcile", "handleObject"},
	// Conditions and observedGeneration, the owner reference and Owns, the
	// finalizer's add and release, and the Events. The status writes through
	// /status, the seat ledger and the Reconcile bodies are given.
	6: {"setConditions", "ticketStatus", "loggerStatus", "LoggerReconciler.ownedDeployment", "LoggerReconciler.SetupWithManager", "LoggerReconciler.adopt", "FlightTicketReconciler.addFinalizer", "FlightTicketReconciler.release", "recordFailure"},
}

// Modules lists, per day-two module with Go of its own, the functions a
// learner writes, as Concept does for a stage.
var Modules = map[string][]string{
	// The webhook: its registration with the Manager, the defaulter, the
	// rule, and the validator's two entry points. The markers, main.go's
	// wiring and the helpers (validate, invalid, namespaceLabels,
	// logRequest) are given.
	"A2": {"LoggerWebhook.SetupWithManager", "LoggerWebhook.Default", "check", "LoggerWebhook.ValidateCreate", "LoggerWebhook.ValidateUpdate"},
	// Conversion: v1's two methods to and from the hub, v2, the interval
	// annotation included. The helpers (intervalOf, timeIntervalOf, seconds,
	// copyInt32), v2.ParseInterval, the hub's Hub() and the webhook's wiring
	// are given.
	"A3": {"Logger.ConvertTo", "Logger.ConvertFrom"},
}

// Steps lists, per exercise and function, what the TODO asks for, where
// the function's doc comment states a contract without saying what goes
// into it: a conversion copies every field of its object, and a field
// forgotten is lost without an error. One line a step, written into the
// TODO as comment lines.
var Steps = map[string]map[string][]string{
	"A3": {
		"Logger.ConvertTo": {
			"Fill dst, the v2 Logger in dstRaw (dstRaw.(*v2.Logger)), from src:",
			"1. metadata: a deep copy of src's ObjectMeta (DeepCopyInto);",
			"2. spec: name; replicas through copyInt32 (dst must not share",
			"   src's pointer); interval: intervalOf(timeInterval), or the",
			"   IntervalAnnotation when it still describes timeInterval",
			"   (v2.ParseInterval accepts it and seconds of it is timeInterval);",
			"3. the IntervalAnnotation is not carried to v2, and an annotation",
			"   map left empty by its removal becomes nil again;",
			"4. status: state, observedGeneration, and a deep copy of the",
			"   conditions.",
		},
		"Logger.ConvertFrom": {
			"Fill dst from src, the v2 Logger in srcRaw (srcRaw.(*v2.Logger)):",
			"It never returns an error: one error fails a whole list.",
			"1. metadata: a deep copy of src's ObjectMeta;",
			"2. spec: name; replicas through copyInt32; timeInterval:",
			"   timeIntervalOf(spec.interval);",
			"3. IntervalAnnotation: spec.interval when intervalOf(timeInterval)",
			"   does not give it back exactly; else none, not even one that",
			"   came with the metadata, and no empty annotation map;",
			"4. status: state, observedGeneration, and a deep copy of the",
			"   conditions.",
		},
	},
}

func main() {
	dest := flag.String("dest", "", "where to write the copy (default workspace/<stage folder>)")
	only := flag.String("only", "", "cut only this function")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: go run ./labs/exercise [-dest DIR] [-only NAME] N   (N from 2 to 6, or A1 to A3)")
	}
	flag.Parse()
	if err := run(flag.Args(), *dest, *only); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(args []string, dest, only string) error {
	if len(args) != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if id := strings.ToUpper(args[0]); Policies[id] != nil {
		return runPolicies(id, dest, only)
	}
	var (
		label, what string // "4", "stage 04"; "A2", "module A2"
		stage       string
		funcs       []string
	)
	if id := strings.ToUpper(args[0]); Modules[id] != nil {
		dirs, _ := filepath.Glob(filepath.Join("advanced", id+"-*"))
		if len(dirs) != 1 {
			return fmt.Errorf("module %s does not exist; run this from the repository root", id)
		}
		label, what, stage, funcs = id, "module "+id, filepath.ToSlash(dirs[0]), Modules[id]
	} else {
		n, err := strconv.Atoi(strings.TrimLeft(args[0], "0"))
		if err != nil || Concept[n] == nil {
			return fmt.Errorf("exercises exist for stages 2 to 6 and modules A1 to A3, not %q (stage 1 has no Go code)", args[0])
		}
		if stage, err = stageDir(n); err != nil {
			return err
		}
		label, what, funcs = strconv.Itoa(n), fmt.Sprintf("stage %02d", n), Concept[n]
	}
	if dest == "" {
		dest = filepath.Join("workspace", filepath.Base(stage))
	}
	if _, err := os.Stat(dest); err == nil {
		return fmt.Errorf("%s already exists. Keep working in it, or remove it to start over: rm -rf %s", dest, dest)
	}
	cut := funcs
	if only != "" {
		cut = []string{only}
	}
	where, err := Copy(stage, dest, label, cut)
	if err != nil {
		_ = os.RemoveAll(dest)
		return err
	}
	// What is given must build: the learner starts from code that compiles.
	build := exec.Command("go", "build", "-o", os.DevNull, "./"+filepath.ToSlash(dest)+"/...")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("the copy in %s does not build (a bug in labs/exercise): %v\n%s", dest, err, out)
	}
	fmt.Printf(">> %s: %s with %d function(s) to write, each a TODO that panics until you do:\n", dest, what, len(cut))
	for _, name := range cut {
		fmt.Printf("     %-40s %s\n", name, where[name])
	}
	if lab := labFile(label); lab != "" {
		fmt.Printf(">> your task: %s, section 'Exercise'\n", lab)
	}
	fmt.Printf(">> build it:  go build -o /dev/null ./%s/...\n", filepath.ToSlash(dest))
	fmt.Printf(">> check it:  make check-%s   (%s's e2e tests, on your copy)\n", label, what)
	fmt.Printf(">> stuck?     the reference is %s/ (make diff-%s shows what it adds to %s)\n", stage, label, base(label))
	return nil
}

// labFile is lab label's file: labs/04-*.md for "4", labs/A2-*.md for "A2";
// "" when there is none.
func labFile(label string) string {
	glob := "labs/" + label + "-*.md"
	if len(label) == 1 {
		glob = "labs/0" + label + "-*.md"
	}
	if m, _ := filepath.Glob(glob); len(m) == 1 {
		return m[0]
	}
	return ""
}

// base is what stage or module label builds on, for the hint: "stage 03"
// for "4"; a module's from advanced/bases.txt.
func base(label string) string {
	if n, err := strconv.Atoi(label); err == nil {
		return fmt.Sprintf("stage %02d", n-1)
	}
	b, _ := os.ReadFile(filepath.Join("advanced", "bases.txt"))
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == label {
			return f[1]
		}
	}
	return "its base"
}

// stageDir is the folder of stage n, e.g. 04-workqueue.
func stageDir(n int) (string, error) {
	m, _ := filepath.Glob(fmt.Sprintf("%02d-*", n))
	for _, d := range m {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d, nil
		}
	}
	return "", fmt.Errorf("stage %d does not exist; run this from the repository root", n)
}

// Copy copies stage into dest without its e2e tests (the checks are the
// stage's own, run by make check-N) and without the unit tests of packages
// with nothing to write (dropOtherTests), points imports of the stage's own
// packages at the copy, and cuts the named functions. It returns the file
// each function was found in.
func Copy(stage, dest string, n string, cut []string) (map[string]string, error) {
	oldPath, newPath := module+"/"+stage, module+"/"+filepath.ToSlash(dest)
	found := map[string]string{}
	err := filepath.WalkDir(stage, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(stage, path)
		if d.IsDir() {
			if rel == "e2e" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dest, rel), 0o755)
		}
		if rel == "README.md" && strings.HasPrefix(stage, "advanced/") {
			return nil // a module's README quotes the code the learner writes
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".go") {
			if src, err = rewrite(src, path, oldPath, newPath, n, cut, found); err != nil {
				return err
			}
			// Renaming a file can only be wrong here; keep its name.
			for name, f := range found {
				if f == "" {
					found[name] = rel
				}
			}
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dest, rel), src, info.Mode().Perm())
	})
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, name := range cut {
		if _, ok := found[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("stage %s has no function %s to cut (labs/exercise's list is out of date)", stage, strings.Join(missing, ", "))
	}
	return found, dropOtherTests(dest, found)
}

// dropOtherTests removes the unit tests of the packages the learner does not
// write in (05's config/ and hack/, say): they check manifests and scripts
// by paths relative to the stage's own folder, which the copy in workspace/
// is not, so they would fail whatever the learner writes. The tests of the
// packages with a TODO stay: they are the learner's fast loop.
func dropOtherTests(dest string, found map[string]string) error {
	keep := map[string]bool{}
	for _, file := range found {
		keep[filepath.Dir(file)] = true
	}
	return filepath.WalkDir(dest, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(dest, path)
		if keep[filepath.Dir(rel)] {
			return nil
		}
		return os.Remove(path)
	})
}

// rewrite returns one Go file of the copy: its own imports moved to the
// copy, the functions in cut replaced by a TODO, and imports that only those
// functions used removed. found records each function cut, with "" for the
// caller to fill in the file name.
func rewrite(src []byte, path, oldPath, newPath string, n string, cut []string, found map[string]string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	type edit struct {
		from, to int
		text     string
	}
	var edits []edit
	for _, imp := range f.Imports {
		if p, moved := copyPath(imp, oldPath, newPath); moved {
			edits = append(edits, edit{fset.Position(imp.Path.Pos()).Offset, fset.Position(imp.Path.End()).Offset, strconv.Quote(p)})
		}
	}
	if !strings.HasSuffix(path, "_test.go") {
		dropped := droppedImports(f, cut, oldPath, newPath)
		hinted := map[string]bool{} // each import is listed once a file
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || !contains(cut, funcName(fn)) {
				continue
			}
			name := funcName(fn)
			if _, dup := found[name]; dup {
				return nil, fmt.Errorf("%s: function %s is defined twice", path, name)
			}
			found[name] = ""
			where := fmt.Sprintf("lab %s's Exercise", n)
			if lab := labFile(n); lab != "" {
				where = lab + ", section Exercise,"
			}
			body := fmt.Sprintf("{\n\t// TODO(lab %s): write %s. The comment above says what it does;\n\t// %s says how.\n%s%s\tpanic(%q)\n}",
				n, name, where, steps(n, name), importsHint(fn, dropped, hinted), fmt.Sprintf("TODO(lab %s): write %s", n, name))
			edits = append(edits, edit{fset.Position(fn.Body.Lbrace).Offset, fset.Position(fn.Body.Rbrace).Offset + 1, body})
		}
	}
	if len(edits) == 0 {
		return src, nil
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].from > edits[j].from })
	out := append([]byte(nil), src...)
	for _, e := range edits {
		out = append(out[:e.from], append([]byte(e.text), out[e.to:]...)...)
	}
	out, err = dropUnusedImports(out, path)
	if err != nil {
		return nil, err
	}
	return format.Source(out)
}

// droppedImports maps the name of each import that only the functions in cut
// use to its import line in the copy (e.g. apierrors -> apierrors "k8s.io/.../errors"):
// once they are cut, nothing uses it, and dropUnusedImports removes it.
func droppedImports(f *ast.File, cut []string, oldPath, newPath string) map[string]string {
	used := map[string]bool{}
	for _, decl := range f.Decls {
		if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil && contains(cut, funcName(fn)) {
			// A cut function keeps its signature, and what that uses.
			decl = &ast.FuncDecl{Recv: fn.Recv, Name: fn.Name, Type: fn.Type}
		}
		for name := range packagesUsed(decl) {
			used[name] = true
		}
	}
	dropped := map[string]string{}
	for _, imp := range f.Imports {
		name := importName(imp)
		if name == "_" || name == "." || used[name] {
			continue
		}
		p, _ := copyPath(imp, oldPath, newPath)
		line := strconv.Quote(p)
		if imp.Name != nil {
			line = imp.Name.Name + " " + line
		}
		dropped[name] = line
	}
	return dropped
}

// copyPath is the path imp has in the copy: the stage's own packages
// (under oldPath) are imported from the copy (newPath); moved says whether
// the path changed.
func copyPath(imp *ast.ImportSpec, oldPath, newPath string) (p string, moved bool) {
	p, _ = strconv.Unquote(imp.Path.Value)
	if p == oldPath || strings.HasPrefix(p, oldPath+"/") {
		return newPath + strings.TrimPrefix(p, oldPath), true
	}
	return p, false
}

// importsHint is the comment lines, for the TODO of fn, that list the
// imports fn used and the copy no longer has: the learner's code will most
// likely need them back. An import already listed at another TODO of the
// file (hinted) is not listed again: one import line is all Go allows.
func importsHint(fn *ast.FuncDecl, dropped map[string]string, hinted map[string]bool) string {
	var lines []string
	for name := range packagesUsed(fn.Body) {
		if line, ok := dropped[name]; ok && !hinted[name] {
			hinted[name] = true
			lines = append(lines, "\t//   "+line+"\n")
		}
	}
	if len(lines) == 0 {
		return ""
	}
	sort.Strings(lines)
	return "\t// The code that was here used these imports, which this file no\n\t// longer has (Go refuses an unused import): add them back.\n" + strings.Join(lines, "")
}

// steps is the comment lines of the TODO of function name in exercise n
// that say what to write (Steps), or "" when its doc comment is enough.
func steps(n, name string) string {
	var b strings.Builder
	for _, line := range Steps[n][name] {
		b.WriteString("\t// " + line + "\n")
	}
	return b.String()
}

// packagesUsed is the set of identifiers that n uses as the X of X.Sel:
// the package names it refers to (and, harmlessly, variables).
func packagesUsed(n ast.Node) map[string]bool {
	used := map[string]bool{}
	ast.Inspect(n, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	return used
}

// dropUnusedImports removes the imports that no code in the file refers to
// any more (Go refuses to compile a file with one).
func dropUnusedImports(src []byte, path string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("after cutting: %w", err)
	}
	used := packagesUsed(f)
	var drop [][2]int
	for _, imp := range f.Imports {
		name := importName(imp)
		if name == "_" || name == "." || used[name] {
			continue
		}
		from := fset.Position(imp.Pos()).Offset
		to := fset.Position(imp.End()).Offset
		// The whole line, so that no blank line or comment is left behind.
		for from > 0 && src[from-1] != '\n' {
			from--
		}
		for to < len(src) && src[to] != '\n' {
			to++
		}
		drop = append(drop, [2]int{from, to + 1})
	}
	for i := len(drop) - 1; i >= 0; i-- {
		src = append(src[:drop[i][0]], src[drop[i][1]:]...)
	}
	return bytes.ReplaceAll(src, []byte("import ()\n"), nil), nil
}

// importName is the name a file uses for an import: its explicit name, or
// the last element of its path without a major-version suffix (k8s.io/api/apps/v1
// is package v1; gopkg.in/yaml.v3 is yaml).
func importName(imp *ast.ImportSpec) string {
	if imp.Name != nil {
		return imp.Name.Name
	}
	p, _ := strconv.Unquote(imp.Path.Value)
	last := p[strings.LastIndex(p, "/")+1:]
	if i := strings.Index(last, ".v"); i > 0 {
		last = last[:i]
	}
	return strings.TrimPrefix(last, "go-")
}

// funcName is "Name" for a function and "Type.Name" for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.Ident:
		return x.Name + "." + fn.Name.Name
	case *ast.IndexExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			return id.Name + "." + fn.Name.Name
		}
	}
	return fn.Name.Name
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

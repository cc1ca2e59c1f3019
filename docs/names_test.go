package docs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// TestNamesInBackticksExist resolves what the docs write in
// backticks, in the prose and in the commands of their sh blocks (and the
// package names that a Go example block calls):
//   - `make TARGET ...`: every target is one `make help` lists;
//   - a code-generation marker (`+kubebuilder:subresource:status`): a Go
//     file of the stage carries it;
//   - a flag (`--workers=2`): the operator's --help lists it (the stage the
//     doc is about, else any stage), or kubectl's help does;
//   - a path (`config/rbac/role.yaml`, `hack/`): it exists, from the
//     repository, the doc's folder or its stage's folder;
//   - a Go name (`processNextWorkItem`, `cache.WaitForCacheSync`,
//     `r.Status().Patch`): the stage the doc is about declares it, else the
//     repository, else the package the qualifier imports.
//
// A span of several words, a field path (`spec.replicas`) or a plain
// lower-case word is prose, not a name, and is not looked up.
func TestNamesInBackticksExist(t *testing.T) {
	r := newResolver(t)
	for _, p := range allDocs(t) {
		if p == "docs/landscape.md" {
			continue // it names other projects' files and targets (kubebuilder's cmd/main.go, make deploy)
		}
		d := readDoc(t, p)
		for _, s := range d.spans {
			if problem := r.check(d, s.text); problem != "" {
				t.Errorf("%s:%d: `%s`: %s", p, s.line, s.text, problem)
			}
		}
		for _, b := range d.blocks {
			if b.lang == "go" && b.marker == "example" {
				// Go written for the doc quotes no file, but what it calls
				// from a package exists there.
				for i, l := range b.body {
					for _, m := range selectorRE.FindAllString(l, -1) {
						if problem := r.checkGoName(d, m); problem != "" {
							t.Errorf("%s:%d: `%s`: %s", p, b.line+1+i, m, problem)
						}
					}
				}
			}
			if b.lang != "sh" && b.lang != "console" {
				continue
			}
			for i, l := range b.body {
				l = strings.TrimPrefix(strings.TrimSpace(l), "$ ")
				for _, cmd := range strings.Split(l, "&&") {
					cmd = strings.TrimSpace(cmd)
					if strings.HasPrefix(cmd, "make ") {
						if problem := r.checkMake(cmd); problem != "" {
							t.Errorf("%s:%d: `%s`: %s", p, b.line+1+i, cmd, problem)
						}
					}
				}
			}
		}
	}
}

type resolver struct {
	t      *testing.T
	repo   *goIndex
	stages map[string]*goIndex
}

var (
	targetsOnce sync.Once
	targets     []*regexp.Regexp // make help's targets, N standing for a number
	flagsOnce   sync.Once
	flagSets    map[string]map[string]bool // stage -> its operator's flags
)

var (
	sharedOnce     sync.Once
	sharedResolver *resolver
)

// newResolver indexes the repository once for all the tests of the package;
// each test reports through its own t.
func newResolver(t *testing.T) *resolver {
	sharedOnce.Do(func() {
		r := &resolver{repo: indexTree(t, "."), stages: map[string]*goIndex{}}
		for _, s := range stageDirs {
			r.stages[s] = indexTree(t, s)
		}
		modules, _ := filepath.Glob(filepath.Join(root, "advanced", "A[0-9]*-*"))
		for _, m := range modules {
			s := "advanced/" + filepath.Base(m)
			r.stages[s] = indexTree(t, s)
		}
		sharedResolver = r
	})
	r := *sharedResolver
	r.t = t
	return &r
}

func (r *resolver) check(d doc, text string) string {
	switch {
	case strings.HasPrefix(text, "make "):
		return r.checkMake(text)
	case markerSpanRE.MatchString(text):
		return r.checkMarker(d, text)
	case flagSpanRE.MatchString(text):
		return r.checkFlags(d, text)
	case isPath(text):
		return r.checkPath(d, text)
	case goNameRE.MatchString(text):
		return r.checkGoName(d, text)
	}
	return ""
}

// --------------------------------------------------------------- markers ---

// markerSpanRE: a code-generation marker (`+kubebuilder:subresource:status`,
// `// +listType=map`, `+genclient:noStatus`).
var markerSpanRE = regexp.MustCompile(`^(// )?\+[a-z][A-Za-z:=.;,"\-_0-9]*$`)

// checkMarker: the marker is in a Go file of the doc's stage (of any stage,
// for a general doc).
func (r *resolver) checkMarker(d doc, text string) string {
	marker := strings.TrimPrefix(text, "// ")
	dirs := stageDirs
	if d.stage != "" {
		dirs = []string{d.stage}
	}
	for _, dir := range dirs {
		found := false
		_ = filepath.WalkDir(filepath.Join(root, dir), func(p string, e os.DirEntry, err error) error {
			if err != nil || found || e.IsDir() || !strings.HasSuffix(p, ".go") {
				return err
			}
			b, _ := os.ReadFile(p)
			found = strings.Contains(string(b), marker)
			return nil
		})
		if found {
			return ""
		}
	}
	return "no Go file of " + strings.Join(dirs, ", ") + " carries this marker"
}

// ------------------------------------------------------------------ make ---

var makeWordRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// checkMake resolves the targets of one make command line.
func (r *resolver) checkMake(cmd string) string {
	targetsOnce.Do(func() {
		c := exec.Command("make", "help")
		c.Dir = root
		out, err := c.Output()
		if err != nil {
			r.t.Fatalf("make help: %v", err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			f := strings.Fields(l)
			if len(f) == 0 || !strings.HasPrefix(l, "  ") {
				continue
			}
			re := "^" + strings.ReplaceAll(regexp.QuoteMeta(f[0]), "N", `(0?[1-6]|N)`) + "$"
			targets = append(targets, regexp.MustCompile(re))
		}
	})
	for _, w := range strings.Fields(cmd)[1:] {
		if strings.Contains(w, "=") || strings.HasPrefix(w, "-") || w == "..." {
			continue // a variable, or a flag of make
		}
		if !makeWordRE.MatchString(w) {
			break // the rest of the line is not make's (a pipe, a comment)
		}
		found := false
		for _, re := range targets {
			found = found || re.MatchString(w)
		}
		if !found {
			return fmt.Sprintf("make help lists no target %q", w)
		}
	}
	return ""
}

// ----------------------------------------------------------------- flags ---

var flagSpanRE = regexp.MustCompile(`^--?[a-z][a-z0-9-]*(=\S*)?( (--?[a-z][a-z0-9-]*(=\S*)?|[0-9a-z$()_]+))*$`)

// checkFlags resolves each flag of a span such as `--workers 1 --resync 0`.
func (r *resolver) checkFlags(d doc, text string) string {
	for _, w := range strings.Fields(text) {
		if !strings.HasPrefix(w, "-") {
			continue
		}
		name := strings.TrimLeft(w, "-")
		name, _, _ = strings.Cut(name, "=")
		stages := stageDirs[1:]
		if d.stage != "" && d.stage != stageDirs[0] {
			stages = []string{d.stage}
		}
		found := false
		for _, s := range stages {
			found = found || r.operatorFlags(s)[name]
		}
		if !found && !r.kubectlFlags()[name] {
			return fmt.Sprintf("neither the operator's --help (%s) nor kubectl's lists -%s", strings.Join(stages, ", "), name)
		}
	}
	return ""
}

var flagLineRE = regexp.MustCompile(`(?m)^\s+-(\S+)`)

// operatorFlags runs a stage's operator with --help and reads its flags.
func (r *resolver) operatorFlags(stage string) map[string]bool {
	flagsOnce.Do(func() {
		flagSets = map[string]map[string]bool{}
		dir := r.t.TempDir()
		var pkgs []string
		// Stages 02 to 06, and the day-two modules with an operator of
		// their own (advanced/*/main.go).
		operators := append([]string{}, stageDirs[1:]...)
		mains, _ := filepath.Glob(filepath.Join(root, "advanced", "A[0-9]*-*", "main.go"))
		for _, m := range mains {
			operators = append(operators, "advanced/"+filepath.Base(filepath.Dir(m)))
		}
		for _, s := range operators {
			pkgs = append(pkgs, "./"+s)
		}
		build := exec.Command("go", append([]string{"build", "-o", dir + "/"}, pkgs...)...)
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			r.t.Fatalf("go build of the operators: %v\n%s", err, out)
		}
		for _, s := range operators {
			// The flag package prints the flags and exits with 0 on --help.
			out, err := exec.Command(filepath.Join(dir, filepath.Base(s)), "--help").CombinedOutput()
			if err != nil {
				r.t.Fatalf("%s --help: %v\n%s", s, err, out)
			}
			flagSets[s] = map[string]bool{}
			for _, m := range flagLineRE.FindAllStringSubmatch(string(out), -1) {
				flagSets[s][m[1]] = true
			}
		}
	})
	return flagSets[stage]
}

var (
	kubectlOnce sync.Once
	kubectlSet  map[string]bool
)

// kubectlFlags reads the flags of the kubectl commands the labs use, from
// the kubectl that `make tools` builds into ./bin.
func (r *resolver) kubectlFlags() map[string]bool {
	kubectlOnce.Do(func() {
		kubectl := filepath.Join(root, "bin", "kubectl")
		if _, err := os.Stat(kubectl); err != nil {
			r.t.Fatalf("%s is missing: `make tools` builds it (this test reads its flags from its --help)", kubectl)
		}
		kubectlSet = map[string]bool{}
		for _, args := range [][]string{{"options"}, {"apply", "--help"}, {"get", "--help"}, {"delete", "--help"},
			{"patch", "--help"}, {"scale", "--help"}, {"auth", "can-i", "--help"}, {"explain", "--help"},
			{"describe", "--help"}, {"logs", "--help"}, {"wait", "--help"}, {"create", "--help"}} {
			out, err := exec.Command(kubectl, args...).Output()
			if err != nil {
				r.t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
			}
			for _, m := range regexp.MustCompile(`(?m)^\s+(?:-(\w), )?--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(string(out), -1) {
				kubectlSet[m[2]] = true
				if m[1] != "" {
					kubectlSet[m[1]] = true
				}
			}
		}
	})
	return kubectlSet
}

// ----------------------------------------------------------------- paths ---

var pathExtRE = regexp.MustCompile(`\.(go|md|ya?ml|sh|mk|json|png|txt|log|mod|sum|c)$`)

// isPath: a span without spaces that ends in a file's extension, or has a
// slash and starts like a path of the repository.
func isPath(s string) bool {
	if strings.ContainsAny(s, " <>*{}") || strings.Contains(s, "://") {
		return false
	}
	if pathExtRE.MatchString(s) {
		return true
	}
	first, _, slash := strings.Cut(s, "/")
	if !slash {
		return false
	}
	_, err := os.Stat(filepath.Join(root, first))
	return err == nil || first == "workspace" || first == ".state" || first == "bin"
}

// checkPath finds a path from the repository, the doc's folder or its
// stage's folder. workspace/<stage>/... is the learner's copy of a stage.
// .state/ and bin/ are made by the tools: the first folder under .state/ and
// the binary under bin/ must be named by a script or the Makefile.
func (r *resolver) checkPath(d doc, p string) string {
	p = strings.TrimPrefix(p, "./")
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$") {
		return "" // a path on the machine, not in the repository
	}
	first, rest, slash := strings.Cut(p, "/")
	if slash && strings.Contains(first, ".") && !strings.HasPrefix(first, ".") {
		return r.checkModule(p) // k8s.io/client-go/tools/cache
	}
	switch first {
	case "workspace":
		p = rest
		if p == "" {
			return ""
		}
	case ".state", "bin":
		name := strings.SplitN(rest, "/", 2)[0]
		if name == "" || r.madeByTheTools(first+"/"+name) {
			return ""
		}
		return "no script or Makefile rule makes it"
	}
	bases := []string{".", filepath.Dir(d.path), d.stage}
	if d.stage == "" {
		bases = append(bases, stageDirs...) // a general doc speaks of every stage
	}
	for _, base := range bases {
		if base == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, base, p)); err == nil {
			return ""
		}
	}
	if !strings.Contains(p, "/") && r.fileNamed(p) {
		return "" // a file's bare name: stream.go, role.yaml
	}
	return "no such file, from the repository, " + filepath.Dir(d.path) + "/ or the stage's folder"
}

// fileNamed: some file of the repository has this name.
func (r *resolver) fileNamed(name string) bool {
	found := false
	_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err != nil || found {
			return filepath.SkipAll
		}
		if e.IsDir() && (e.Name() == ".git" || e.Name() == "workspace" || e.Name() == ".state" || e.Name() == "bin") {
			return filepath.SkipDir
		}
		found = e.Name() == name
		return nil
	})
	return found
}

// checkModule: a Go module or package path is in a go.sum of the repository.
func (r *resolver) checkModule(p string) string {
	for _, sum := range []string{"go.sum", "tools/kube/go.sum", "tools/etcd/go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, sum))
		if err != nil {
			r.t.Fatal(err)
		}
		for q := p; q != "."; q = filepath.Dir(q) {
			if strings.Contains(string(b), "\n"+q+" ") || strings.HasPrefix(string(b), q+" ") {
				return ""
			}
		}
	}
	return "no go.sum of the repository names this module"
}

// madeByTheTools: the Makefile or a script under cluster/, labs/ or tools/
// writes this name.
func (r *resolver) madeByTheTools(p string) bool {
	name := p[strings.Index(p, "/")+1:]
	for _, glob := range []string{"Makefile", "*/*.sh", "*/*/*.sh", "labs/*/*.go", "trace/*.go", "bench/*.go", "harness/*.go"} {
		files, _ := filepath.Glob(filepath.Join(root, glob))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if strings.Contains(string(b), name) {
				return true
			}
		}
	}
	return false
}

// -------------------------------------------------------------- Go names ---

// goNameRE: an identifier, a selector chain (`cache.WaitForCacheSync`,
// `r.Status().Patch`), maybe a pointer or a call with its arguments.
var goNameRE = regexp.MustCompile(`^[*&]?[A-Za-z_][A-Za-z0-9_]*(\(\))?(\.[A-Za-z_][A-Za-z0-9_]*(\([^()]*\))?)*(\([^()]*\))?$`)

// fieldRoots start a field path of an object, or a CEL expression's
// variable (a CRD's rules: self, oldSelf; an admission policy's: object,
// namespaceObject, request...), not Go.
var fieldRoots = map[string]bool{"spec": true, "status": true, "metadata": true, "data": true, "items": true, "self": true, "oldSelf": true,
	"object": true, "oldObject": true, "namespaceObject": true, "request": true, "params": true, "variables": true, "authorizer": true}

// selectorRE: pkg.Name in Go code.
var selectorRE = regexp.MustCompile(`\b[a-z][A-Za-z0-9]*\.[A-Z][A-Za-z0-9]*`)

var callArgsRE = regexp.MustCompile(`\([^()]*\)`)

func (r *resolver) checkGoName(d doc, text string) string {
	text = strings.TrimLeft(text, "*&")
	parts := strings.Split(callArgsRE.ReplaceAllString(text, ""), ".")
	if fieldRoots[parts[0]] || domainRE.MatchString(text) {
		return ""
	}
	stage := r.repo
	if d.stage != "" {
		stage = r.stages[d.stage]
	}
	if len(parts) == 1 {
		name := parts[0]
		if !looksLikeGo(name, text) || r.known(stage, name) {
			return ""
		}
		return "declared nowhere in " + orRepo(d.stage) + ", the repository or the packages it depends on"
	}
	// A qualified name: the qualifier is a type or variable of the stage,
	// or a package.
	x := parts[0]
	if len(stage.decls[x]) > 0 && len(stage.imports[x]) == 0 {
		return r.checkMembers(stage, parts[1:])
	}
	if pkgs := packagesNamed(r.t, x, stage, r.repo); len(pkgs) > 0 {
		for _, p := range pkgs {
			if len(p.decls[parts[1]]) > 0 || p.private[parts[1]] {
				return r.checkMembers(stage, parts[2:])
			}
		}
		return fmt.Sprintf("no package named %s declares %s", x, parts[1])
	}
	if !looksLikeGo(x, text) && len(r.repo.decls[x]) == 0 {
		return "" // not Go: a file name, a version
	}
	return r.checkMembers(stage, parts[1:])
}

// domainRE: flights.com, example.com, k8s.io are API groups and hosts.
var domainRE = regexp.MustCompile(`^[a-z0-9.-]+\.(com|io|org|dev|net)$`)

// known: the stage, the repository or a package it depends on declares the
// name (a field's JSON name counts), or a string constant has it as its
// value (a reason such as AlreadyExists, a feature gate's name).
func (r *resolver) known(stage *goIndex, name string) bool {
	// r.repo.lits[name+":"]: a field the bench reads from /proc (VmHWM:).
	if len(stage.decls[name]) > 0 || len(r.repo.decls[name]) > 0 || r.repo.lits[name] || r.repo.lits[name+":"] {
		return true
	}
	for _, x := range libraries(r.t) {
		if len(x.decls[name]) > 0 || x.lits[name] {
			return true
		}
	}
	return false
}

// checkMembers: each selected name is a method or field declared in the
// stage, the repository or a package it depends on.
func (r *resolver) checkMembers(stage *goIndex, names []string) string {
	for _, n := range names {
		if !r.known(stage, n) {
			return fmt.Sprintf("no method or field %s in the repository or the packages it depends on", n)
		}
	}
	return ""
}

// looksLikeGo: a single word is taken for a Go name when it is written as a
// call, or in camelCase or PascalCase with a capital inside (handleObject,
// SetupWithManager), or is a test (TestX); other words are prose.
func looksLikeGo(name, text string) bool {
	if strings.HasSuffix(text, ")") {
		return true
	}
	for i, c := range name {
		if i > 0 && c >= 'A' && c <= 'Z' && strings.ToUpper(name) != name {
			return true
		}
	}
	return false
}

func orRepo(stage string) string {
	if stage == "" {
		return "the repository"
	}
	return stage
}

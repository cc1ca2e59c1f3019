package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A goIndex is what a set of Go files declares, read with go/parser (no
// type checking): enough to tell whether a name a doc writes exists.
type goIndex struct {
	decls   map[string][]string            // name -> files declaring it: funcs, methods, types, fields, interface methods, consts, vars
	funcs   map[string]*ast.FuncDecl       // "Name" and "Recv.Name" -> its declaration
	files   map[*ast.FuncDecl]string       // a declaration's file
	lits    map[string]bool                // every string literal's value
	imports map[string]map[string]bool     // import name (alias or the path's last element) -> import paths
	notes   map[string][]*ast.CommentGroup // a file's comments
	library bool                           // a dependency: only its exported names and JSON names count
	private map[string]bool                // a dependency's unexported names, for pkg.name
	fset    *token.FileSet
}

func newIndex() *goIndex {
	return &goIndex{decls: map[string][]string{}, funcs: map[string]*ast.FuncDecl{}, files: map[*ast.FuncDecl]string{},
		lits: map[string]bool{}, imports: map[string]map[string]bool{}, notes: map[string][]*ast.CommentGroup{}, private: map[string]bool{}, fset: token.NewFileSet()}
}

func (x *goIndex) declare(name, file string) {
	if x.library && !ast.IsExported(name) {
		x.private[name] = true
		return
	}
	for _, f := range x.decls[name] {
		if f == file {
			return
		}
	}
	x.decls[name] = append(x.decls[name], file)
}

// addFile indexes one Go file; file is the name recorded for its decls.
func (x *goIndex) addFile(t *testing.T, path, file string) {
	f, err := parser.ParseFile(x.fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	x.notes[file] = append(x.notes[file], f.Comments...)
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		names := []string{p[strings.LastIndex(p, "/")+1:]}
		if imp.Name != nil {
			names = []string{imp.Name.Name}
		}
		for _, name := range names {
			if x.imports[name] == nil {
				x.imports[name] = map[string]bool{}
			}
			x.imports[name][p] = true
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			x.declare(n.Name.Name, file)
			key := n.Name.Name
			if n.Recv != nil && len(n.Recv.List) == 1 {
				key = recvName(n.Recv.List[0].Type) + "." + key
			}
			x.funcs[key], x.files[n] = n, file
			if _, ok := x.funcs[n.Name.Name]; !ok {
				x.funcs[n.Name.Name] = n
			}
		case *ast.TypeSpec:
			x.declare(n.Name.Name, file)
		case *ast.ValueSpec:
			for _, id := range n.Names {
				x.declare(id.Name, file)
			}
		case *ast.Field:
			for _, id := range n.Names {
				x.declare(id.Name, file)
			}
			if n.Tag != nil { // a field's JSON name is how docs and YAML spell it
				tag, _ := strconv.Unquote(n.Tag.Value)
				if j, ok := reflect.StructTag(tag).Lookup("json"); ok {
					if name, _, _ := strings.Cut(j, ","); name != "" && name != "-" {
						x.decls[name] = append(x.decls[name], file)
					}
				}
			}
			if len(n.Names) == 0 { // an embedded type is a field of its own name
				x.declare(recvName(n.Type), file)
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING {
				if s, err := strconv.Unquote(n.Value); err == nil {
					x.lits[s] = true
				}
			}
		}
		return true
	})
}

// recvName is the type name of a receiver or embedded field: T, *T, T[K], pkg.T.
func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.IndexListExpr:
		return recvName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// indexTree indexes every Go file under dir (relative to the repository),
// tests and generated code included, leaving out nested modules and the
// folders that are not the repository's code.
func indexTree(t *testing.T, dir string) *goIndex {
	t.Helper()
	x := newIndex()
	err := filepath.WalkDir(filepath.Join(root, dir), func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if rel != dir {
				switch rel {
				case "docs": // these tests: their literals are the broken names they feed the checks
					return filepath.SkipDir
				}
				switch e.Name() {
				case ".git", ".state", "bin", "workspace":
					return filepath.SkipDir
				}
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") {
			x.addFile(t, p, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

var (
	libOnce  sync.Once
	libIndex map[string]*goIndex // import path -> what the package declares
	libErr   error
)

// libraries indexes the packages the repository's code depends on, as the
// Go toolchain resolves them: the repository's own, the standard library's,
// and those of the Kubernetes modules (k8s.io/..., sigs.k8s.io/...), test
// dependencies included.
func libraries(t *testing.T) map[string]*goIndex {
	t.Helper()
	libOnce.Do(func() {
		cmd := exec.Command("go", "list", "-e", "-deps", "-test", "-f", "{{if not .ForTest}}{{.ImportPath}}\t{{.Dir}}{{end}}", "./...")
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			libErr = err
			return
		}
		libIndex = map[string]*goIndex{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			path, dir, _ := strings.Cut(line, "\t")
			first := strings.Split(path, "/")[0]
			if dir == "" || libIndex[path] != nil || strings.Contains(dir, "/workspace/") ||
				strings.Contains(first, ".") && first != "k8s.io" && first != "sigs.k8s.io" && first != "github.com" {
				continue
			}
			if first == "github.com" && !strings.HasPrefix(path, "github.com/operator-flow/") {
				continue
			}
			x := newIndex()
			x.library = !strings.HasPrefix(path, "github.com/operator-flow/")
			files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
			for _, f := range files {
				if !strings.HasSuffix(f, "_test.go") {
					x.addFile(t, f, path)
				}
			}
			libIndex[path] = x
		}
	})
	if libErr != nil {
		t.Fatalf("go list of the packages the repository depends on: %v", libErr)
	}
	return libIndex
}

// packagesNamed are the indexed packages a qualifier may stand for: those
// the stage (or the repository) imports under that name, and any package
// whose path ends in it.
func packagesNamed(t *testing.T, name string, imports ...*goIndex) []*goIndex {
	libs := libraries(t)
	var out []*goIndex
	for _, x := range imports {
		for p := range x.imports[name] {
			if libs[p] != nil {
				out = append(out, libs[p])
			}
		}
	}
	for p, x := range libs {
		if strings.HasSuffix(p, "/"+name) || p == name {
			out = append(out, x)
		}
	}
	return out
}

// fileComments are the comments of the file that declares f.
func fileComments(x *goIndex, f *ast.FuncDecl) []*ast.CommentGroup {
	return x.notes[x.files[f]]
}

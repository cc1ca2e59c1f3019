package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every function the tool cuts exists in its stage, and the lab's Exercise
// section names it, so that a learner knows exactly what to write.
func TestConceptFunctions(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	for n, funcs := range Concept {
		stage, err := stageDir(n)
		if err != nil {
			t.Fatal(err)
		}
		dest := filepath.Join(t.TempDir(), stage)
		found, err := Copy(stage, dest, fmt.Sprint(n), funcs)
		if err != nil {
			t.Errorf("stage %d: %v", n, err)
			continue
		}
		labs, _ := filepath.Glob(fmt.Sprintf("labs/%02d-*.md", n))
		if len(labs) != 1 {
			t.Fatalf("lab %d: %v", n, labs)
		}
		b, err := os.ReadFile(labs[0])
		if err != nil {
			t.Fatal(err)
		}
		_, exercise, _ := strings.Cut(string(b), "\n## Exercise\n")
		for _, f := range funcs {
			if !strings.Contains(exercise, "`"+f+"`") {
				t.Errorf("%s: the Exercise section does not name `%s` (in %s), which make exercise-%d cuts out", labs[0], f, found[f], n)
			}
		}
		// The cut functions are gone from the copy, and nothing else is.
		src, err := os.ReadFile(filepath.Join(dest, found[funcs[0]]))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), fmt.Sprintf("panic(\"TODO(lab %d): write %s\")", n, funcs[0])) {
			t.Errorf("stage %d: %s was not replaced by a TODO in %s", n, funcs[0], found[funcs[0]])
		}
	}
}

// The same for the day-two modules with Go of their own; a module's lab may
// come after its exercise, and is checked once it is there. The copy keeps
// the unit tests of the packages with a TODO only, and a function with
// Steps has them in its TODO.
func TestModuleFunctions(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	for id, funcs := range Modules {
		dirs, _ := filepath.Glob(filepath.Join("advanced", id+"-*"))
		if len(dirs) != 1 {
			t.Fatalf("module %s: folders %v", id, dirs)
		}
		dest := filepath.Join(t.TempDir(), filepath.Base(dirs[0]))
		found, err := Copy(dirs[0], dest, id, funcs)
		if err != nil {
			t.Errorf("module %s: %v", id, err)
			continue
		}
		for _, f := range funcs {
			src, err := os.ReadFile(filepath.Join(dest, found[f]))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), fmt.Sprintf("panic(\"TODO(lab %s): write %s\")", id, f)) {
				t.Errorf("module %s: %s was not replaced by a TODO in %s", id, f, found[f])
			}
			for _, step := range Steps[id][f] {
				if !strings.Contains(string(src), "\t// "+step+"\n") {
					t.Errorf("module %s: the TODO of %s lacks the step %q", id, f, step)
				}
			}
		}
		err = filepath.WalkDir(dest, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(dest, filepath.Dir(path))
			for _, file := range found {
				if filepath.Dir(file) == rel {
					return nil
				}
			}
			t.Errorf("module %s: the copy keeps %s, in a package with nothing to write", id, path)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		labs, _ := filepath.Glob("labs/" + id + "-*.md")
		if len(labs) == 0 {
			t.Logf("module %s has no lab yet to name its functions", id)
			continue
		}
		b, err := os.ReadFile(labs[0])
		if err != nil {
			t.Fatal(err)
		}
		_, exercise, _ := strings.Cut(string(b), "\n## Exercise\n")
		for _, f := range funcs {
			if !strings.Contains(exercise, "`"+f+"`") {
				t.Errorf("%s: the Exercise section does not name `%s` (in %s), which make exercise-%s cuts out", labs[0], f, found[f], id)
			}
		}
	}
	// Steps name functions the exercises cut.
	for id, steps := range Steps {
		for f := range steps {
			if !contains(Modules[id], f) {
				t.Errorf("Steps[%q] has %s, which Modules[%q] does not cut", id, f, id)
			}
		}
	}
}

// rewrite, file by file: the copy imports the stage's own packages from its
// new path; a cut function's TODO lists the imports only it used, which the
// file drops (Go refuses an unused import), each once a file and under the
// copy's path; what the rest of the file, or a cut function's signature,
// uses stays.
func TestRewrite(t *testing.T) {
	stage, copied := module+"/03-informer-cache", module+"/workspace/03-informer-cache"
	own := stage + "/api/flights/v1"
	for _, c := range []struct {
		name, src string
		cut       []string
		want, not []string
	}{{
		name: "imports follow the copy",
		src:  "package x\n\nimport (\n\t\"fmt\"\n\tv1 \"" + own + "\"\n)\n\nfunc f() { fmt.Println(v1.SchemeGroupVersion) }\n",
		want: []string{`v1 "` + copied + `/api/flights/v1"`},
		not:  []string{own},
	}, {
		name: "a cut drops the imports only it used",
		src:  "package x\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\n// f says hello.\nfunc f() { fmt.Println(strings.ToUpper(\"hi\")) }\n\nfunc g() { fmt.Println() }\n",
		cut:  []string{"f"},
		want: []string{"import (\n\t\"fmt\"\n)", "// f says hello.", `panic("TODO(lab 3): write f")`, "//   \"strings\"\n"},
		not:  []string{"//   \"fmt\""},
	}, {
		name: "the hint names the copy's path",
		src:  "package x\n\nimport v1 \"" + own + "\"\n\nfunc f() { _ = v1.SchemeGroupVersion }\n",
		cut:  []string{"f"},
		want: []string{`//   v1 "` + copied + `/api/flights/v1"`},
		not:  []string{"import v1"},
	}, {
		name: "an import is listed once a file",
		src:  "package x\n\nimport \"strings\"\n\nfunc f() { _ = strings.ToUpper(\"a\") }\n\nfunc g() { _ = strings.ToLower(\"b\") }\n",
		cut:  []string{"f", "g"},
		want: []string{"//   \"strings\"\n\tpanic(\"TODO(lab 3): write f\")"},
		not:  []string{"//   \"strings\"\n\tpanic(\"TODO(lab 3): write g\")", "import \"strings\""},
	}, {
		name: "the signature keeps its imports",
		src:  "package x\n\nimport \"strings\"\n\nfunc f(b *strings.Builder) { b.WriteString(\"hi\") }\n",
		cut:  []string{"f"},
		want: []string{"import \"strings\""},
		not:  []string{"add them back"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			out, err := rewrite([]byte(c.src), "x.go", stage, copied, "3", c.cut, map[string]string{})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("want %q in:\n%s", w, out)
				}
			}
			for _, n := range c.not {
				if strings.Contains(string(out), n) {
					t.Errorf("want no %q in:\n%s", n, out)
				}
			}
		})
	}
}

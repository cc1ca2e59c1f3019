package main

import (
	"fmt"
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
		found, err := Copy(stage, dest, n, funcs)
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

// A copy of a stage under a new path imports its own packages from there.
func TestImportsFollowTheCopy(t *testing.T) {
	src := []byte("package x\n\nimport (\n\t\"fmt\"\n\tv1 \"" + module + "/03-informer-cache/api/flights/v1\"\n)\n\nfunc f() { fmt.Println(v1.SchemeGroupVersion) }\n")
	out, err := rewrite(src, "x.go", module+"/03-informer-cache", module+"/workspace/03-informer-cache", 3, nil, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"`+module+`/workspace/03-informer-cache/api/flights/v1"`) {
		t.Errorf("import not rewritten:\n%s", out)
	}
}

// Cutting a function drops the imports only it used, keeps the rest, and
// lists the dropped ones in the TODO, for the learner to add back.
func TestCutDropsUnusedImports(t *testing.T) {
	src := []byte("package x\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n\n// f says hello.\nfunc f() { fmt.Println(strings.ToUpper(\"hi\")) }\n\nfunc g() { fmt.Println() }\n")
	out, err := rewrite(src, "x.go", "a", "b", 2, []string{"f"}, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if !strings.Contains(s, "import (\n\t\"fmt\"\n)") || !strings.Contains(s, `panic("TODO(lab 2): write f")`) || !strings.Contains(s, "// f says hello.") ||
		!strings.Contains(s, "//   \"strings\"\n") || strings.Contains(s, "//   \"fmt\"") {
		t.Errorf("unexpected result:\n%s", s)
	}
}

// An import of the stage's own packages that only a cut function used is
// listed in its TODO under the copy's path, not the stage's.
func TestImportsHintNamesTheCopy(t *testing.T) {
	src := []byte("package x\n\nimport v1 \"" + module + "/03-informer-cache/api/flights/v1\"\n\nfunc f() { _ = v1.SchemeGroupVersion }\n")
	out, err := rewrite(src, "x.go", module+"/03-informer-cache", module+"/workspace/03-informer-cache", 3, []string{"f"}, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, `//   v1 "`+module+`/workspace/03-informer-cache/api/flights/v1"`) || strings.Contains(s, "import v1") {
		t.Errorf("want the import dropped and listed under the copy's path:\n%s", s)
	}
}

// An import the cut function's signature uses stays: the signature does.
func TestSignatureKeepsItsImports(t *testing.T) {
	src := []byte("package x\n\nimport \"strings\"\n\nfunc f(b *strings.Builder) { b.WriteString(\"hi\") }\n")
	out, err := rewrite(src, "x.go", "a", "b", 2, []string{"f"}, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, "import \"strings\"") || strings.Contains(s, "add them back") {
		t.Errorf("want strings kept and no hint:\n%s", s)
	}
}

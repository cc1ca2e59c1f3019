package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	doc := "# Title\n\n<!-- bench:results:start -->\nold\n<!-- bench:results:end -->\n\ntext\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeBlock(path, "results", "new table\n"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# Title\n\n<!-- bench:results:start -->\n\nnew table\n\n<!-- bench:results:end -->\n\ntext\n"
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if err := writeBlock(path, "targets", "x"); err == nil {
		t.Errorf("a missing block was not reported")
	}
}

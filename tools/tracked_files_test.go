package tools

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// maxTrackedSize is the largest file the repository may track. The largest
// it tracks on purpose are go.sum files (tools/kube/go.sum, about 44 kB)
// and bench/results/latest.png (about 31 kB); 256 KiB leaves them room to
// grow, while anything built (a Go binary is megabytes), an archive or a
// data dump is well above it and belongs in .gitignore or a release.
const maxTrackedSize = 256 << 10

// binaryMagic are the first bytes of compiled programs: ELF (Linux), Mach-O
// (macOS: 32 and 64 bit, either byte order, and universal) and PE (Windows).
var binaryMagic = []struct {
	name  string
	magic []byte
}{
	{"an ELF executable", []byte("\x7fELF")},
	{"a Mach-O executable", []byte{0xfe, 0xed, 0xfa, 0xce}},
	{"a Mach-O executable", []byte{0xfe, 0xed, 0xfa, 0xcf}},
	{"a Mach-O executable", []byte{0xce, 0xfa, 0xed, 0xfe}},
	{"a Mach-O executable", []byte{0xcf, 0xfa, 0xed, 0xfe}},
	{"a universal Mach-O executable", []byte{0xca, 0xfe, 0xba, 0xbe}},
	{"a PE (Windows) executable", []byte("MZ")},
}

// trackedFileProblem says what is wrong with tracking a file of this size
// that starts with head, or "".
func trackedFileProblem(size int64, head []byte) string {
	for _, m := range binaryMagic {
		if bytes.HasPrefix(head, m.magic) {
			return "is " + m.name + ": build it, do not track it (.gitignore)"
		}
	}
	if size > maxTrackedSize {
		return fmt.Sprintf("has %d bytes, more than the %d a tracked file may have", size, maxTrackedSize)
	}
	return ""
}

func TestTrackedFileProblem(t *testing.T) {
	for _, c := range []struct {
		name string
		size int64
		head []byte
		bad  bool
	}{
		{"Go source", 2000, []byte("package main\n"), false},
		{"a PNG", 31160, []byte("\x89PNG\r\n"), false},
		{"a Linux binary", 4 << 20, []byte("\x7fELF\x02\x01"), true},
		{"a small Linux binary", 900, []byte("\x7fELF\x02\x01"), true},
		{"a macOS arm64 binary", 900, []byte{0xcf, 0xfa, 0xed, 0xfe, 0x0c}, true},
		{"a Windows binary", 900, []byte("MZ\x90\x00"), true},
		{"a large text file", maxTrackedSize + 1, []byte("# a dump\n"), true},
		{"a text file at the limit", maxTrackedSize, []byte("# notes\n"), false},
	} {
		if got := trackedFileProblem(c.size, c.head) != ""; got != c.bad {
			t.Errorf("%s: a problem = %v, want %v", c.name, got, c.bad)
		}
	}
}

// TestNoBinaryIsTracked: every file git tracks is source, not something
// built from it (a compiled program at the root, say, from a `go build`
// run there), and none is larger than maxTrackedSize.
func TestNoBinaryIsTracked(t *testing.T) {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, name := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
		path := filepath.Join("..", string(name))
		fi, err := os.Lstat(path)
		if os.IsNotExist(err) || (err == nil && !fi.Mode().IsRegular()) {
			continue // deleted in the work tree, or a symlink
		}
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, 8)
		n, err := io.ReadFull(f, head)
		_ = f.Close()
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			t.Fatal(err)
		}
		if p := trackedFileProblem(fi.Size(), head[:n]); p != "" {
			t.Errorf("%s %s", name, p)
		}
	}
}

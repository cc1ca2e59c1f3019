package tools

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// nodeImageStandIns are the commands tools/kind/node-image.sh runs, each
// doing just enough for the script to go on: the Go toolchain, make and gcc
// write empty binaries (kubeadm lists the images it wants, ctr prints a
// spec), debootstrap writes the few rootfs files the script edits, chroot
// answers dpkg-query, jq passes its input through, and docker records what
// it was asked to do. $T holds the templates of the binaries they write.
var nodeImageStandIns = map[string]string{
	"docker": `echo "docker $*" >>"$CALLS"
case $1 in
image) exit 1 ;; # no image yet: the build runs
import | build) cat >/dev/null ;;
save) touch "$3" ;;
esac
`,
	"debootstrap": `echo "debootstrap $*" >>"$CALLS"
for a; do target=$prev; prev=$a; done
mkdir -p "$target/lib/systemd/system/sysinit.target.wants" "$target/etc/systemd/system" "$target/usr/lib/cni" "$target/usr/bin" "$target/bin"
touch "$target/etc/systemd/journald.conf" "$target/usr/lib/cni/ptp"
cp "$T/busybox" "$target/bin/"
`,
	"chroot": `case $2 in dpkg-query) printf '1:1.35.0-fake' ;; esac` + "\n",
	"jq":     "cat\n",
	"gpgv":   "\n",
	"gcc":    `while [ $# -gt 0 ]; do [ "$1" = -o ] && cp "$T/plain" "$2"; shift; done` + "\n",
	"make": `case "$*" in
*print-kube-ldflags*) echo -X fake ;;
*) for a; do case $a in */bin/*) mkdir -p "${a%/*}" && cp "$T/plain" "$a" ;; esac; done ;;
esac
`,
	"go": `case $1 in
env) echo "$T/modcache" ;;
build) while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done
	for b in kubelet kube-proxy; do cp "$T/plain" "$out/$b"; done
	cp "$T/kubeadm" "$out/kubeadm" ;;
install) for a; do case $a in *@*) b=${a%@*}; b=${b##*/}; cp "$T/$b" "$GOBIN/$b" 2>/dev/null || cp "$T/plain" "$GOBIN/$b" ;; esac; done ;;
esac
`,
}

// nodeImageTemplates are the binaries the stand-ins write.
var nodeImageTemplates = map[string]string{
	"plain":   "",
	"busybox": "echo sh; echo ls\n",
	"ctr":     "echo '{}'\n",
	"kubeadm": `for c in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do echo "registry.k8s.io/$c:v1.36.3"; done
echo registry.k8s.io/coredns/coredns:v1.12.1; echo registry.k8s.io/pause:3.10.2; echo registry.k8s.io/etcd:3.6.5-0
`,
}

// TestNodeImageNamesItsOwnImagesOnly runs tools/kind/node-image.sh with
// stand-ins. DOCKER_HOST may name the machine's own engine, where
// registry.k8s.io/... and docker.io/library/busybox:1.37 may be another
// project's images: every image the script makes there is named under
// operator-flow/, and the control-plane and busybox images get their real
// names only inside the node (the builder container's containerd). The
// rootfs comes from a debootstrap that refuses to go on unchecked, and the
// node image records which busybox-static it carries.
func TestNodeImageNamesItsOwnImagesOnly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("node-image.sh builds on Linux only")
	}
	kindFiles, _ := filepath.Glob("kind/*")
	var files []string
	for _, f := range kindFiles {
		files = append(files, filepath.ToSlash(filepath.Join("tools", f)))
	}
	root := copyRepo(t, append(files, "tools/versions.mk", "tools/kube/go.sum", "tools/etcd/go.sum")...)
	bin, tmpl := t.TempDir(), t.TempDir()
	for name, body := range nodeImageStandIns {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range nodeImageTemplates {
		if err := os.WriteFile(filepath.Join(tmpl, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	kind := filepath.Join(tmpl, "modcache", "sigs.k8s.io", "kind@"+pinned(t, "KIND_VERSION"), "images", "base", "files")
	for _, f := range []string{"usr/local/bin/entrypoint", "usr/local/bin/clean-install", "kind/bin/mount-product-files.sh", "etc/containerd/config.toml"} {
		if err := os.MkdirAll(filepath.Join(kind, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(kind, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keyring := filepath.Join(tmpl, "keyring.gpg")
	if err := os.WriteFile(keyring, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(tmpl, "calls")
	cmd := exec.Command(filepath.Join(root, "tools", "kind", "node-image.sh"))
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "T="+tmpl, "CALLS="+calls,
		"DEBIAN_KEYRING="+keyring, "MAKEFLAGS=", "MAKELEVEL=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node-image.sh with stand-ins: %v\n%s", err, out)
	}
	b, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	checkNodeImageCalls(t, string(b), keyring)
}

// checkNodeImageCalls checks the commands node-image.sh ran (one a line) with
// the stand-ins of TestNodeImageNamesItsOwnImagesOnly.
func checkNodeImageCalls(t *testing.T, calls, keyring string) {
	t.Helper()
	made := imagesNamed(calls)
	if len(made) < 8 {
		t.Fatalf("the script named only %d images (%v); the calls:\n%s", len(made), made, calls)
	}
	for _, name := range made {
		if !strings.HasPrefix(name, "operator-flow/") {
			t.Errorf("node-image.sh named an image %s in the engine DOCKER_HOST names, which may be another project's", name)
		}
	}
	for _, want := range []string{
		"sh operator-flow/node-images registry.k8s.io/kube-apiserver:v1.36.3 ", // the builder's containerd names them
		" docker.io/library/busybox:1.37",
		"debootstrap --variant=minbase --force-check-gpg --keyring=" + keyring + " ",
		"LABEL operator-flow.busybox-static=1:1.35.0-fake",
	} {
		if !strings.Contains(calls, want) {
			t.Errorf("no call with %q; the calls:\n%s", want, calls)
		}
	}
	if !strings.Contains(calls, ",busybox-static ") && !strings.Contains(calls, ",busybox-static,") {
		t.Errorf("debootstrap does not install busybox-static, the Loggers' image, from the suite; the calls:\n%s", calls)
	}
}

// imagesNamed is every image name the calls gave the engine: docker import,
// commit, tag, build -t and save.
func imagesNamed(calls string) []string {
	var made []string
	for _, line := range strings.Split(strings.TrimSpace(calls), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 2 && f[0] == "docker" && (f[1] == "import" || f[1] == "commit" || f[1] == "tag"):
			made = append(made, f[len(f)-1])
		case len(f) > 2 && f[0] == "docker" && f[1] == "build":
			for i := 2; i+1 < len(f); i++ {
				if f[i] == "-t" {
					made = append(made, f[i+1])
				}
			}
		case len(f) > 3 && f[0] == "docker" && f[1] == "save":
			made = append(made, f[4:]...) // docker save -o FILE NAMES...
		}
	}
	return made
}

// pinned is a version from tools/versions.mk.
func pinned(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("versions.mk")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == name && f[1] == ":=" {
			return f[2]
		}
	}
	t.Fatalf("tools/versions.mk pins no %s", name)
	return ""
}

package cluster

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kwokStandIns is a ./bin whose kwokctl creates, lists and deletes a cluster
// by a file in KWOK_WORKDIR, and prints a kubeconfig with a client key in it,
// as the real one's `get kubeconfig` does (it flattens the key in); every
// other binary cluster.sh needs answers success.
func kwokStandIns(t *testing.T) string {
	t.Helper()
	bin := fakeBin(t, map[string]string{
		"kwokctl": `case "$1 $2" in
"get clusters") [ ! -e "$KWOK_WORKDIR/created" ] || echo operator-flow ;;
"create cluster") mkdir -p "$KWOK_WORKDIR" && touch "$KWOK_WORKDIR/created" ;;
"get kubeconfig") echo 'users: [{name: admin, user: {client-key-data: c2VjcmV0}}]' ;;
"delete cluster") rm -f "$KWOK_WORKDIR/created" ;;
esac
`,
	})
	for _, b := range []string{"kwok", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd"} {
		if err := os.WriteFile(filepath.Join(bin, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// sandbox is a repository of its own for cluster.sh: the script and the pins
// copied into a temporary folder, with bin as its ./bin. cluster.sh finds
// ./bin and .state next to itself, so it never touches this checkout's.
func sandbox(t *testing.T, bin string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range []string{"cluster/cluster.sh", "tools/versions.mk"} {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bin, filepath.Join(root, "bin")); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestStateIsPrivate: .state/kubeconfig embeds the cluster's admin client
// key, and .state/kwok holds kwokctl's pki. Whatever the umask, `up` leaves
// the kubeconfig 0600 and .state 0700, also when .state is there already
// with mode 0755.
func TestStateIsPrivate(t *testing.T) {
	root := sandbox(t, kwokStandIns(t))
	state := filepath.Join(root, ".state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o755); err != nil { // whatever the test's umask
		t.Fatal(err)
	}
	env := []string{"CLUSTER=kwok", "CLUSTER_NAME=", "CREATED_FILE="}
	if out, _, err := run(t, env, "sh", "-c", "umask 022 && exec \"$0\" up", filepath.Join(root, "cluster", "cluster.sh")); err != nil {
		t.Fatalf("cluster.sh up with stand-in kwok binaries: %v\n%s", err, out)
	}
	kubeconfig := filepath.Join(state, "kubeconfig")
	if b, err := os.ReadFile(kubeconfig); err != nil || !strings.Contains(string(b), "client-key-data") {
		t.Fatalf("up did not write what kwokctl get kubeconfig printed into %s (%v):\n%s", kubeconfig, err, b)
	}
	for path, want := range map[string]fs.FileMode{state: 0o700, kubeconfig: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s is %#o after cluster.sh up, want %#o: it holds the cluster's admin credentials", strings.TrimPrefix(path, root+"/"), got, want)
		}
	}
}

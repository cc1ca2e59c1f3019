package trace

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
)

// Source is a log that grows while the trace runs: the audit log, the
// operator's recording, its log. A trace reads only what was added after it
// started.
type Source interface {
	Size() (int64, error)
	ReadFrom(offset int64) ([]byte, error)
}

// File is a Source on this machine. A file that does not exist yet is empty.
type File string

func (f File) Size() (int64, error) {
	st, err := os.Stat(string(f))
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (f File) ReadFrom(offset int64) ([]byte, error) {
	b, err := os.ReadFile(string(f))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if offset > int64(len(b)) { // rotated since: all of it is new
		offset = 0
	}
	return b[offset:], nil
}

// kindAudit is the audit log inside a kind node (cluster/kind.yaml puts it
// there), read with docker exec.
type kindAudit struct{ node string }

const kindAuditPath = "/var/log/kubernetes/audit/audit.log"

func (k kindAudit) Size() (int64, error) {
	out, err := exec.Command("docker", "exec", k.node, "stat", "-c", "%s", kindAuditPath).Output()
	if err != nil {
		return 0, fmt.Errorf("reading the audit log's size in kind node %s: %v", k.node, err)
	}
	return strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
}

func (k kindAudit) ReadFrom(offset int64) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("docker", "exec", k.node, "tail", "-c", "+"+strconv.FormatInt(offset+1, 10), kindAuditPath)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("reading the audit log in kind node %s: %v: %s", k.node, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// AuditLog finds the audit log of the cluster a kubeconfig points at: a kwok
// cluster that cluster.sh or the e2e harness started (context kwok-NAME, its
// files under root/.state/kwok), or a kind cluster (context kind-NAME).
func AuditLog(root, kubeconfig string) (Source, error) {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return nil, err
	}
	ctx := cfg.CurrentContext
	recreate := "it was created before the course turned the audit log on (cluster/audit-policy.yaml); recreate it: make cluster-down, then make lab-N again"
	switch {
	case strings.HasPrefix(ctx, "kwok-"):
		path := filepath.Join(root, ".state", "kwok", "clusters", strings.TrimPrefix(ctx, "kwok-"), "logs", "audit.log")
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("the kwok cluster %q writes no audit log (%s is missing): %s", ctx, path, recreate)
		}
		return File(path), nil
	case strings.HasPrefix(ctx, "kind-"):
		k := kindAudit{node: strings.TrimPrefix(ctx, "kind-") + "-control-plane"}
		if _, err := k.Size(); err != nil {
			return nil, fmt.Errorf("the kind cluster %q has no audit log at %s (%v): %s", ctx, kindAuditPath, err, recreate)
		}
		return k, nil
	}
	return nil, fmt.Errorf("kubeconfig %s points at context %q, which is neither a kwok cluster (kwok-NAME) nor a kind cluster (kind-NAME) of this course: the trace cannot find its audit log", kubeconfig, ctx)
}

// Growing is a Source held in memory, such as the output of an operator a
// test started (harness.Operator.Log).
type Growing func() []byte

func (g Growing) Size() (int64, error) { return int64(len(g())), nil }

func (g Growing) ReadFrom(offset int64) ([]byte, error) {
	b := g()
	if offset > int64(len(b)) {
		offset = 0
	}
	return b[offset:], nil
}

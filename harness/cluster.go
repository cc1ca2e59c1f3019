package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/envfuncs"
	"sigs.k8s.io/e2e-framework/support"
	"sigs.k8s.io/e2e-framework/support/kind"
	"sigs.k8s.io/e2e-framework/support/kwok"
)

// testEnv is the e2e-framework environment of the running test binary.
var testEnv env.Environment

// privateCluster is the name of the kwok cluster Main created for this test
// binary, or "" when the tests run on a cluster someone else started.
var privateCluster string

// Env is the e2e-framework environment that Main prepared. Tests run their
// features with Env().Test(t, feature).
func Env() env.Environment {
	if testEnv == nil {
		panic("harness.Env called before harness.Main: call harness.Main(m, ...) from TestMain")
	}
	return testEnv
}

// Main is the body of every stage's TestMain. It prepares a cluster, installs
// crds (files or folders, relative to the repository root), runs the tests and
// removes whatever it created. It does not return.
//
//	func TestMain(m *testing.M) { harness.Main(m, "01-crd-yaml/crds") }
func Main(m *testing.M, crds ...string) {
	os.Exit(run(m, crds, false, nil, nil))
}

// MainWith is Main for a package whose CRDs need more than to be applied
// (module A3's Logger CRD needs a conversion webhook to call): setup runs
// once the cluster is ready, before the tests; finish runs after them, while
// the cluster is still there.
func MainWith(m *testing.M, setup, finish env.Func) {
	os.Exit(run(m, nil, false, setup, finish))
}

// MainPrivate is Main for tests that stop and start the cluster's own
// components (chaos tests): it always creates a cluster of its own, even when
// E2E_KUBECONFIG names a shared one, and deletes it at the end.
func MainPrivate(m *testing.M, crds ...string) {
	os.Exit(run(m, crds, true, nil, nil))
}

func run(m *testing.M, crds []string, private bool, setup, finish env.Func) int {
	root, err := RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		return 1
	}
	cfg := envconf.New()
	testEnv = env.NewWithConfig(cfg)
	// Set when this binary creates its cluster: it goes last, after finish.
	var destroyCluster env.Func

	if kc := os.Getenv("E2E_KUBECONFIG"); kc != "" && !private {
		// A cluster someone else started (make test, make e2e): use it, and
		// leave it running afterwards.
		if _, err := os.Stat(kc); err != nil {
			fmt.Fprintf(os.Stderr, "harness: E2E_KUBECONFIG=%s: %v (start a cluster with 'make cluster')\n", kc, err)
			return 1
		}
		cfg.WithKubeconfigFile(kc)
	} else {
		// No cluster given: create one for this test binary alone, with a name
		// of its own so that test binaries running side by side never share
		// (and never delete) each other's cluster.
		provider, name, err := newProvider(root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "harness:", err)
			return 1
		}
		fmt.Fprintf(os.Stderr, "harness: no E2E_KUBECONFIG given; creating cluster %q for this package (it is deleted when the tests end)\n", name)
		privateCluster = name
		config, err := clusterConfig(root, name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "harness:", err)
			return 1
		}
		testEnv.Setup(envfuncs.CreateClusterWithConfig(provider, name, config))
		if os.Getenv("CLUSTER") != "kind" {
			testEnv.Setup(addKwokNode(root))
		} else {
			// e2e-framework creates kind clusters without --wait: the node
			// may not be Ready (no CNI yet) when the first test starts.
			testEnv.Setup(waitNodeReady(kindNode(name)))
		}
		destroyCluster = destroy(provider, name)
	}

	testEnv.Setup(func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		c, err := NewClients(cfg.Client().RESTConfig())
		if err != nil {
			return ctx, err
		}
		for _, p := range crds {
			if err := c.InstallCRDs(ctx, filepath.Join(root, p)); err != nil {
				return ctx, fmt.Errorf("installing CRDs from %s: %w", p, err)
			}
		}
		return ctx, nil
	})
	if setup != nil {
		testEnv.Setup(setup)
	}
	if finish != nil {
		testEnv.Finish(finish)
	}
	if destroyCluster != nil {
		testEnv.Finish(destroyCluster)
	}
	return testEnv.Run(m)
}

// kindNode is the name of a one-node kind cluster's node container.
func kindNode(cluster string) string { return cluster + "-control-plane" }

// newProvider returns the e2e-framework cluster provider that CLUSTER selects,
// configured to use ./bin and to keep every file under .state.
func newProvider(root string) (support.E2EClusterProvider, string, error) {
	bin := filepath.Join(root, "bin")
	state := filepath.Join(root, ".state")
	name := "e2e-" + randomSuffix()
	// The clusters' kubeconfigs in .state embed their admin client keys:
	// this account's only, as cluster/cluster.sh makes it (also where it
	// was there already, made with the usual 0755).
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, "", err
	}
	if err := os.Chmod(state, 0o700); err != nil {
		return nil, "", err
	}
	// kwokctl and kind add a context to $KUBECONFIG (default ~/.kube/config).
	// Point it at a file of our own, so the user's kubeconfig stays untouched.
	if err := setenv("KUBECONFIG", filepath.Join(state, "kubeconfig-"+name),
		"PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH")); err != nil {
		return nil, "", err
	}

	switch c := os.Getenv("CLUSTER"); c {
	case "kind":
		if err := dockerReady(); err != nil {
			return nil, "", err
		}
		// Without ./bin/kind, e2e-framework would `go install` a kind of
		// its own choosing (another version, another default node image).
		if _, err := os.Stat(filepath.Join(bin, "kind")); err != nil {
			return nil, "", fmt.Errorf("%s is missing: run 'CLUSTER=kind make cluster' or 'make tools' first", filepath.Join(bin, "kind"))
		}
		// KIND_NODE_IMAGE overrides the pin, as for cluster.sh: where
		// kindest/node cannot be pulled, the image `make kind-image` built
		// (operator-flow/kind-node:KUBE_VERSION).
		image := os.Getenv("KIND_NODE_IMAGE")
		if image == "" {
			var err error
			if image, err = pin(root, "KIND_NODE_IMAGE"); err != nil {
				return nil, "", err
			}
		}
		return kind.NewProvider().WithPath(filepath.Join(bin, "kind")).WithOpts(kind.WithImage(image)), name, nil
	case "", "kwok":
		for _, b := range []string{"kwokctl", "kwok", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"} {
			if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
				return nil, "", fmt.Errorf("%s is missing: run 'make tools' first (it builds the pinned cluster binaries once)", filepath.Join(bin, b))
			}
		}
		// The same settings cluster/cluster.sh gives kwokctl.
		if err := setenv(
			"KWOK_WORKDIR", filepath.Join(state, "kwok"),
			"KWOK_KUBE_APISERVER_BINARY", filepath.Join(bin, "kube-apiserver"),
			"KWOK_KUBE_CONTROLLER_MANAGER_BINARY", filepath.Join(bin, "kube-controller-manager"),
			"KWOK_KUBE_SCHEDULER_BINARY", filepath.Join(bin, "kube-scheduler"),
			"KWOK_KUBECTL_BINARY", filepath.Join(bin, "kubectl"),
			"KWOK_ETCD_BINARY", filepath.Join(bin, "etcd"),
			"KWOK_CONTROLLER_BINARY", filepath.Join(bin, "kwok"),
			"KWOK_KUBE_AUDIT_POLICY", filepath.Join(root, "cluster", "audit-policy.yaml"),
		); err != nil {
			return nil, "", err
		}
		return kwok.NewProvider().WithPath(filepath.Join(bin, "kwokctl")), name, nil
	default:
		return nil, "", fmt.Errorf("CLUSTER=%s is not known: use kwok (the default) or kind", c)
	}
}

// setenv sets each name in kv (name, value, name, value...) in this
// process's environment.
func setenv(kv ...string) error {
	for i := 0; i+1 < len(kv); i += 2 {
		if err := os.Setenv(kv[i], kv[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// clusterConfig is the provider's configuration file, the one cluster.sh
// gives kwokctl or kind. For kind it is a copy in .state with the audit
// policy's hostPath made absolute: kind resolves a relative one from the
// directory it runs in, which for a test is the test's package.
func clusterConfig(root, name string) (string, error) {
	if os.Getenv("CLUSTER") != "kind" {
		return filepath.Join(root, "cluster", "kwokctl.yaml"), nil
	}
	b, err := os.ReadFile(filepath.Join(root, "cluster", "kind.yaml"))
	if err != nil {
		return "", err
	}
	const rel = "hostPath: cluster/audit-policy.yaml"
	if !strings.Contains(string(b), rel) {
		return "", fmt.Errorf("cluster/kind.yaml has no %q line to make absolute", rel)
	}
	abs := strings.Replace(string(b), rel, "hostPath: "+filepath.Join(root, "cluster", "audit-policy.yaml"), 1)
	path := filepath.Join(root, ".state", "kind-"+name+".yaml")
	return path, os.WriteFile(path, []byte(abs), 0o644)
}

// pin reads a `NAME := value` line of tools/versions.mk, where every pinned
// version lives.
func pin(root, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "tools", "versions.mk"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == name && f[1] == ":=" {
			return f[2], nil
		}
	}
	return "", fmt.Errorf("tools/versions.mk pins no %s", name)
}

// waitNodeReady waits until the named node reports Ready.
func waitNodeReady(node string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		c, err := NewClients(cfg.Client().RESTConfig())
		if err != nil {
			return ctx, err
		}
		return ctx, c.WaitNodeReady(ctx, node, 2*time.Minute)
	}
}

// addKwokNode creates the simulated node from cluster/node.yaml (as `make
// cluster` does) and waits until kwok-controller reports it Ready, so that
// pods can be scheduled.
func addKwokNode(root string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		c, err := NewClients(cfg.Client().RESTConfig())
		if err != nil {
			return ctx, err
		}
		if err := c.ApplyFile(ctx, filepath.Join(root, "cluster", "node.yaml"), ""); err != nil {
			return ctx, err
		}
		return ctx, c.WaitNodeReady(ctx, "kwok-node-0", time.Minute)
	}
}

// destroy deletes the cluster this test binary created.
func destroy(p support.E2EClusterProvider, name string) env.Func {
	return func(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
		fmt.Fprintf(os.Stderr, "harness: deleting cluster %q\n", name)
		if err := p.Destroy(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "harness: deleting cluster %q: %v\n", name, err)
			return ctx, err
		}
		// The cluster's kubeconfig, and clusterConfig's copy for kind.
		for _, f := range []string{os.Getenv("KUBECONFIG"), RepoPath(".state", "kind-"+name+".yaml")} {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return ctx, err
			}
		}
		return ctx, nil
	}
}

// dockerReady fails within seconds when no Docker engine answers, so that
// CLUSTER=kind reports the real problem instead of hanging inside kind.
func dockerReady() error {
	if _, err := exec.LookPath("docker"); err != nil {
		return fmt.Errorf("CLUSTER=kind needs Docker, and no 'docker' command is on PATH; install Docker or use the default embedded cluster (unset CLUSTER)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("CLUSTER=kind needs a running Docker engine, and none answered (docker info: %s); start Docker or use the default embedded cluster (unset CLUSTER)", lines[len(lines)-1])
	}
	return nil
}

func randomSuffix() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Package etcd shows a test, or a lab, what the API server stored: the raw bytes under
// a key prefix in the etcd of the cluster that harness.Main prepared, which
// no API request shows, such as the version a custom resource is stored in
// (its JSON's apiVersion) or the protobuf of a built-in kind (the k8s\x00
// magic, then a runtime.Unknown).
//
// It is a package of its own because etcd's Go client brings gRPC, which
// imports golang.org/x/net/trace, which imports html/template; a binary that
// links text/template keeps every exported method the linker would
// otherwise drop, which nearly doubles an e2e test binary. Only the tests
// that read etcd pay that. (gRPC's grpcnotrace build tag would avoid it, but
// every go test command would have to pass it.)
package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/operator-flow/operator-flow/harness"
)

// Get returns every key under prefix with the bytes stored there, in the
// cluster of the suite (Read says how), and fails t when it cannot.
func Get(ctx context.Context, t testing.TB, prefix string) map[string][]byte {
	t.Helper()
	kv, err := Read(ctx, harness.Env().EnvConf().KubeconfigFile(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// Read returns every key under prefix with the bytes stored there, in the
// etcd of the cluster kubeconfig names. Both cluster kinds store under
// /registry (kube-apiserver's default --etcd-prefix, which kwokctl keeps),
// e.g. /registry/example.com/loggers/NAMESPACE/NAME.
//
// It reads etcd directly, not through the API server: on kwok etcd is a
// local process; on kind it runs in the node container and is reached at
// the node's address with the API server's client certificate, read out of
// the node.
func Read(ctx context.Context, kubeconfig, prefix string) (map[string][]byte, error) {
	cfg, err := config(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("finding the cluster's etcd: %w", err)
	}
	// A silent client: a failure comes back as the error below.
	cfg.Logger = zap.NewNop()
	cfg.DialTimeout = 10 * time.Second
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd at %v: %w", cfg.Endpoints, err)
	}
	defer func() { _ = c.Close() }() // the read is done; nothing is lost
	// The client dials in the background and would wait for an etcd it
	// cannot reach for as long as ctx lets it.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("reading %s* from etcd at %v: %w", prefix, cfg.Endpoints, err)
	}
	kv := make(map[string][]byte, len(resp.Kvs))
	for _, x := range resp.Kvs {
		kv[string(x.Key)] = x.Value
	}
	return kv, nil
}

// config finds the etcd behind a kubeconfig of this course's clusters by its
// context's name, as trace.AuditLog does: kwok-NAME for a kwok cluster that
// cluster.sh or harness.Main started, kind-NAME for a kind cluster.
func config(kubeconfig string) (clientv3.Config, error) {
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return clientv3.Config{}, err
	}
	if name, ok := strings.CutPrefix(kc.CurrentContext, "kwok-"); ok {
		return kwok(name)
	}
	if name, ok := strings.CutPrefix(kc.CurrentContext, "kind-"); ok {
		// kind's name for the node of a one-node cluster.
		return kind(name + "-control-plane")
	}
	return clientv3.Config{}, fmt.Errorf("kubeconfig %s points at context %q, neither a kwok cluster (kwok-NAME) nor a kind cluster (kind-NAME) of this course", kubeconfig, kc.CurrentContext)
}

// kwok: kwokctl records each component's command line in the cluster's
// kwok.yaml; the API server's --etcd-servers is where it stores. The binary
// runtime serves etcd over plain HTTP, with no client authentication, on
// loopback as cluster/kwokctl.yaml's bindAddress has it.
func kwok(name string) (clientv3.Config, error) {
	path := harness.RepoPath(".state", "kwok", "clusters", name, "kwok.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return clientv3.Config{}, err
	}
	// The first YAML document is the KwokctlConfiguration; Stages follow.
	first, _, _ := strings.Cut(string(b), "\n---\n")
	var conf struct {
		Components []struct {
			Name string   `json:"name"`
			Args []string `json:"args"`
		} `json:"components"`
	}
	if err := yaml.Unmarshal([]byte(first), &conf); err != nil {
		return clientv3.Config{}, fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range conf.Components {
		if c.Name != "kube-apiserver" {
			continue
		}
		for _, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--etcd-servers="); ok {
				endpoints := strings.Split(v, ",")
				if u, err := url.Parse(endpoints[0]); err != nil || u.Scheme != "http" {
					return clientv3.Config{}, fmt.Errorf("%s: kube-apiserver's --etcd-servers=%s is not the plain http URL of the binary runtime", path, v)
				}
				return clientv3.Config{Endpoints: endpoints}, nil
			}
		}
	}
	return clientv3.Config{}, fmt.Errorf("%s has no kube-apiserver component with --etcd-servers", path)
}

// kind: kubeadm's etcd listens on the node's address as well as on loopback,
// and admits any client certificate its CA signed; the API server's is in
// the node. The node's address is reachable from this machine with Docker
// Engine on Linux (with Docker Desktop the containers run in a VM).
func kind(node string) (clientv3.Config, error) {
	read := func(path string) ([]byte, error) {
		out, err := exec.Command("docker", "exec", node, "cat", path).Output()
		if err != nil {
			return nil, fmt.Errorf("reading %s in kind node %s: %w", path, node, err)
		}
		return out, nil
	}
	// etcd's static pod says where it serves clients outside the node.
	manifest, err := read("/etc/kubernetes/manifests/etcd.yaml")
	if err != nil {
		return clientv3.Config{}, err
	}
	var endpoint string
	for _, f := range strings.Fields(string(manifest)) {
		if v, ok := strings.CutPrefix(f, "--advertise-client-urls="); ok {
			endpoint = strings.Split(v, ",")[0]
		}
	}
	if endpoint == "" {
		return clientv3.Config{}, fmt.Errorf("kind node %s: no --advertise-client-urls in etcd's manifest", node)
	}
	ca, err := read("/etc/kubernetes/pki/etcd/ca.crt")
	if err != nil {
		return clientv3.Config{}, err
	}
	certPEM, err := read("/etc/kubernetes/pki/apiserver-etcd-client.crt")
	if err != nil {
		return clientv3.Config{}, err
	}
	keyPEM, err := read("/etc/kubernetes/pki/apiserver-etcd-client.key")
	if err != nil {
		return clientv3.Config{}, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return clientv3.Config{}, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return clientv3.Config{}, fmt.Errorf("kind node %s: no certificate in etcd's ca.crt", node)
	}
	return clientv3.Config{
		Endpoints: []string{endpoint},
		TLS:       &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12},
	}, nil
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigWith writes a kubeconfig whose current context is context, for
// a server nobody serves, and returns its path.
func kubeconfigWith(t *testing.T, context string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts[context] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = context
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCourseConfig: courseConfig accepts the course's clusters only, and
// says what is wrong and how to fix it otherwise.
func TestCourseConfig(t *testing.T) {
	for _, context := range []string{"kwok-operator-flow", "kind-operator-flow"} {
		cfg, err := courseConfig(kubeconfigWith(t, context))
		if err != nil || cfg.Host != "https://127.0.0.1:1" {
			t.Errorf("context %s: want its configuration, got %v, %v", context, cfg, err)
		}
	}
	_, err := courseConfig(kubeconfigWith(t, "prod"))
	if err == nil {
		t.Fatal(`context "prod": want an error`)
	}
	for _, part := range []string{`context "prod"`, "kwok-NAME", "kind-NAME", "cluster/cluster.sh kubeconfig"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("the error does not say %q: %v", part, err)
		}
	}
}

// TestNoKubeconfig: without --kubeconfig and $KUBECONFIG, courseConfig
// refuses, even when ~/.kube/config names a course cluster: it does not
// fall back to it (nor to the in-cluster configuration).
func TestNoKubeconfig(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(kubeconfigWith(t, "kwok-operator-flow"), filepath.Join(home, ".kube", "config")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "1")
	_, err := courseConfig("")
	if err == nil || !strings.Contains(err.Error(), "neither --kubeconfig nor $KUBECONFIG") {
		t.Fatalf("want the error that no kubeconfig is set, got %v", err)
	}
}

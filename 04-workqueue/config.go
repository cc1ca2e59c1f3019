package main

import (
	"errors"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// restConfig finds the API server and the credentials to talk to it: the
// kubeconfig file named by --kubeconfig; else, inside a pod, the service
// account that Kubernetes mounts there; else $KUBECONFIG or ~/.kube/config,
// as kubectl would.
//
// qps and burst pace the requests of every client built from it, each
// client on its own (see defaultQPS in main.go).
func restConfig(kubeconfig string, qps float64, burst int) (*rest.Config, error) {
	cfg, err := loadConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = float32(qps), burst
	cfg.UserAgent = "operator-flow/" + stageName
	return cfg, nil
}

func loadConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	cfg, err := rest.InClusterConfig()
	if !errors.Is(err, rest.ErrNotInCluster) {
		return cfg, err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
}

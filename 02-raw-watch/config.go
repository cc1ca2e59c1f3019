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
func restConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := loadConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	// client-go allows 5 requests per second, in bursts of 10, by default:
	// far too slow for a batch (200 new Loggers need 400 status writes). At
	// 300 a second, in bursts of 600, the client no longer sets the pace of
	// this operator, and a bug that loops still cannot flood the API
	// server. Every client built from cfg has a limit of its own. (Stage 05's
	// controller-runtime turns the client's limit off and leaves the pace to
	// the API server's Priority and Fairness.)
	cfg.QPS, cfg.Burst = 300, 600
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

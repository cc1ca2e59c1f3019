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
	// client-go allows 5 requests per second by default, which would make
	// `make bench` measure that throttle rather than this stage's machinery.
	// 300 per second, bursts of 600: the defaults of stage 04's
	// --kube-api-qps and --kube-api-burst, where the numbers are explained.
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

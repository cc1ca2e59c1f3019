// Command raw-watch is stage 02 of operator-flow: the whole operator as one
// plain loop over client-go watches, with nothing hidden.
//
// It watches FlightTickets, Loggers and the Loggers' Deployments, handles one
// event at a time, and logs every event it receives. It books tickets and
// keeps a Deployment for every Logger, as docs/behaviour.md describes. The
// README lists what this simple loop gets wrong; stage 03 fixes it.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/operator-flow/operator-flow/apicount"
)

// stageName names this operator in its User-Agent and its first log line.
const stageName = "02-raw-watch"

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig; when empty: the in-cluster config, else $KUBECONFIG")
	namespace := flag.String("namespace", "", "watch only this namespace (default: all namespaces)")
	image := flag.String("logger-image", "busybox:1.37", "container image of the Loggers' pods")
	watchTimeout := flag.Duration("watch-timeout", defaultWatchTimeout, "how long one watch request lasts before the API server ends it and the loop resumes")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)

	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		log.Fatalf("no Kubernetes configuration: %v", err)
	}
	// Count every request the clients below send, to print at exit.
	counter := apicount.New()
	counter.Wrap(cfg)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}

	// SIGINT (Ctrl-C) or SIGTERM (kubectl delete pod, systemd) cancels ctx,
	// and the operator winds down. The line is logged before ctx ends, so it
	// always comes before the request summary. A second signal exits at once.
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		log.Print("shutting down")
		cancel()
		<-signals
		os.Exit(1)
	}()

	o := &operator{dyn: dyn, kube: kube, namespace: *namespace, image: *image, watchTimeout: *watchTimeout}
	log.Printf("%s started; namespace=%q logger-image=%q", stageName, o.namespace, o.image)
	o.run(ctx)
	counter.WriteSummary(os.Stderr)
}

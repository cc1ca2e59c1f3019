// Command informer-cache is stage 03 of operator-flow: the operator of stage
// 02 on shared informers, with generated typed clients.
//
// Informers keep a local copy (a cache) of FlightTickets, Loggers and the
// Loggers' Deployments, kept current by one WATCH per kind (it streams the
// current objects first), and call event handlers when something changes.
// Handlers read from that cache through listers, so handling an event costs
// no GET. Deployment events run the Logger's whole sync, which repairs
// drift. The README lists what is still wrong; stage 04 fixes it.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/operator-flow/operator-flow/03-informer-cache/generated/clientset/versioned"
	"github.com/operator-flow/operator-flow/apicount"
)

// stageName names this operator in its User-Agent and its first log line.
const stageName = "03-informer-cache"

// defaultResync: how often the informers hand every cached object to the
// handlers again, as an update with nothing changed. It costs no request,
// only a pass over the cache. In this stage it is also the only retry there
// is: a write that failed waits for it (see README). A minute bounds that
// wait and keeps the idle work small.
const defaultResync = time.Minute

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig; when empty: the in-cluster config, else $KUBECONFIG")
	namespace := flag.String("namespace", "", "watch only this namespace (default: all namespaces)")
	image := flag.String("logger-image", "busybox:1.37", "container image of the Loggers' pods")
	resync := flag.Duration("resync", defaultResync, "how often every cached object is handed to the handlers again (0: never)")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)

	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		log.Fatalf("no Kubernetes configuration: %v", err)
	}
	// Count every request the clients below send, to print at exit.
	counter := apicount.New()
	counter.Wrap(cfg)
	client, err := versioned.NewForConfig(cfg)
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

	o := &operator{client: client, kube: kube, namespace: *namespace, image: *image, resync: *resync}
	log.Printf("%s started; namespace=%q logger-image=%q resync=%s", stageName, o.namespace, o.image, o.resync)
	o.run(ctx)
	counter.WriteSummary(os.Stderr)
}

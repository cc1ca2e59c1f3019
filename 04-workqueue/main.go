// Command workqueue is stage 04 of operator-flow: the operator of stage 03
// in the shape of kubernetes/sample-controller.
//
// The informers and listers of stage 03 stay. What changes is where the work
// happens: event handlers only put the key (namespace/name) of the object
// that changed into a rate-limited work queue, one queue per kind, and
// --workers goroutines per queue take keys out and sync them. A sync that
// fails is tried again with exponential backoff; a key queued many times
// while it waits is synced once. The README lists what is still wrong;
// stage 05 fixes it.
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

	"github.com/operator-flow/operator-flow/04-workqueue/generated/clientset/versioned"
	"github.com/operator-flow/operator-flow/apicount"
)

// stageName names this operator in its User-Agent and its first log line.
const stageName = "04-workqueue"

// defaultResync: how often the informers hand every cached object to the
// handlers again, as an update with nothing changed. It costs no request,
// only a pass over the cache. In stage 03 it was the only retry there was,
// so it came every minute. Here the queue retries failed keys itself, and
// the resync is only a safety net, for a change that no event reported:
// every ten minutes is plenty.
const defaultResync = 10 * time.Minute

// defaultWorkers: goroutines per queue, as many as sample-controller runs.
// Two keep one slow request from holding up a whole kind.
const defaultWorkers = 2

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig; when empty: the in-cluster config, else $KUBECONFIG")
	namespace := flag.String("namespace", "", "watch only this namespace (default: all namespaces)")
	image := flag.String("logger-image", "busybox:1.37", "container image of the Loggers' pods")
	resync := flag.Duration("resync", defaultResync, "how often every cached object is handed to the handlers again (0: never)")
	workers := flag.Int("workers", defaultWorkers, "workers per queue (FlightTickets, Loggers): keys synced at the same time")
	flag.Parse()
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if *workers < 1 {
		log.Fatalf("--workers=%d: there must be at least one worker per queue", *workers)
	}

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
	// and the operator winds down: the workers take no new keys and give up
	// the requests in flight (the next start syncs those objects again), the
	// informers stop, and run returns. The line is logged before ctx ends,
	// so it always comes before the request summary. A second signal exits
	// at once.
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

	o := &operator{client: client, kube: kube, namespace: *namespace, image: *image, resync: *resync, workers: *workers}
	log.Printf("%s started; namespace=%q logger-image=%q resync=%s workers=%d", stageName, o.namespace, o.image, o.resync, o.workers)
	o.run(ctx)
	counter.WriteSummary(os.Stderr)
}

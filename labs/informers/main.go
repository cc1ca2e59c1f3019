// Command informers shows, with numbers, why client-go's informers are
// *shared* (docs/shared-informers.md).
//
// One process runs two controllers that both need FlightTickets: think of a
// booker and an auditor. With --mode plain each builds an informer of its
// own, as two independent pieces of code would. With --mode shared both ask
// one SharedInformerFactory, which hands them the same informer. The program
// counts what that costs:
//
//   - WATCH connections the API server holds open for flighttickets, from
//     its own gauge apiserver_longrunning_requests (before and after, so
//     other clients' watches do not count);
//   - cached copies: the tickets held in the informers' stores, counting
//     each store once however many controllers read it;
//   - heap: the live heap after a garbage collection, before and after.
//
// It creates --tickets FlightTickets (label demo=informers) in --namespace
// first and deletes them at the end. Both controllers watch only those.
//
//	$ go run ./labs/informers --mode plain
//	plain:  2 controllers, 2 informers, 2 WATCH connections, 2000 tickets cached (1000 per informer), heap +2.4 MiB
//	$ go run ./labs/informers --mode shared
//	shared: 2 controllers, 1 informer, 1 WATCH connection, 1000 tickets cached (1000 per informer), heap +1.3 MiB
//
// (A real run on the workshop cluster; the heap numbers vary a little from
// run to run, the others do not.)
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	flightsv1 "github.com/operator-flow/operator-flow/03-informer-cache/api/flights/v1"
	"github.com/operator-flow/operator-flow/03-informer-cache/generated/clientset/versioned"
	"github.com/operator-flow/operator-flow/03-informer-cache/generated/informers/externalversions"
	flightsinformers "github.com/operator-flow/operator-flow/03-informer-cache/generated/informers/externalversions/flights/v1"
)

// demoLabel marks the tickets this program creates, and is all the
// controllers watch.
const demoLabel = "demo=informers"

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (eval $(make env) sets KUBECONFIG)")
	mode := flag.String("mode", "shared", `"plain": an informer per controller; "shared": one factory for both`)
	namespace := flag.String("namespace", "lab", "an existing namespace to create the demo tickets in")
	tickets := flag.Int("tickets", 1000, "how many FlightTickets to create (and delete at the end)")
	flag.Parse()
	if *mode != "plain" && *mode != "shared" {
		fmt.Fprintf(os.Stderr, "error: --mode must be plain or shared, not %q\n", *mode)
		os.Exit(2)
	}
	if err := run(*kubeconfig, *mode, *namespace, *tickets); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, mode, namespace string, tickets int) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("no cluster configuration (run eval $(make env) first): %w", err)
	}
	cfg.QPS, cfg.Burst = 200, 400 // creating the demo tickets quickly
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()

	if err := createTickets(ctx, client, namespace, tickets); err != nil {
		return err
	}
	defer deleteTickets(client, namespace)

	watchesBefore, err := openWatches(ctx, kube)
	if err != nil {
		return err
	}
	heapBefore := liveHeap()

	// Two controllers, each with the informer it was given. Only the way
	// they get it differs between the modes.
	stop := make(chan struct{})
	defer close(stop)
	onlyDemo := func(o *metav1.ListOptions) { o.LabelSelector = demoLabel }
	var informers []cache.SharedIndexInformer
	switch mode {
	case "plain":
		// What two independent pieces of code do when each builds its own:
		// two informers, two WATCHes, two caches of the same objects.
		for range 2 {
			informers = append(informers, flightsinformers.NewFilteredFlightTicketInformer(client, namespace, 0, cache.Indexers{}, onlyDemo))
		}
		for _, inf := range informers {
			go inf.Run(stop)
		}
	case "shared":
		// One factory: the first controller's Informer() call creates the
		// informer, the second gets the same one. Start runs it once.
		factory := externalversions.NewSharedInformerFactoryWithOptions(client, 0,
			externalversions.WithNamespace(namespace), externalversions.WithTweakListOptions(onlyDemo))
		for range 2 {
			informers = append(informers, factory.Flights().V1().FlightTickets().Informer())
		}
		factory.Start(stop)
	}
	for _, inf := range informers {
		// A handler each, as a controller would register.
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{}); err != nil {
			return err
		}
	}
	synced := make([]cache.InformerSynced, len(informers))
	for i, inf := range informers {
		synced[i] = inf.HasSynced
	}
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), synced...) {
		return errors.New("the informers did not sync within 2 minutes")
	}

	watchesAfter, err := openWatches(ctx, kube)
	if err != nil {
		return err
	}
	heapAfter := liveHeap()

	// Cached copies: each distinct cache once. (The factory hands out a
	// typed wrapper per call, around the one informer and its one cache.)
	distinct := map[cache.Indexer]bool{}
	cached := 0
	for _, inf := range informers {
		if idx := inf.GetIndexer(); !distinct[idx] {
			distinct[idx] = true
			cached += len(idx.List())
		}
	}
	fmt.Printf("%-7s 2 controllers, %s, %s, %d tickets cached (%d per informer), heap %+.1f MiB\n",
		mode+":", plural(len(distinct), "informer"), plural(watchesAfter-watchesBefore, "WATCH connection"),
		cached, cached/len(distinct), float64(int64(heapAfter)-int64(heapBefore))/(1<<20))
	return nil
}

// createTickets creates n demo tickets, with progress, unless they exist.
func createTickets(ctx context.Context, client versioned.Interface, namespace string, n int) error {
	tickets := client.FlightsV1().FlightTickets(namespace)
	for i := range n {
		t := &flightsv1.FlightTicket{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("demo-%05d", i), Labels: map[string]string{"demo": "informers"}},
			Spec:       flightsv1.FlightTicketSpec{From: "Oslo", To: "Bergen", Number: 1},
		}
		if _, err := tickets.Create(ctx, t, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating demo ticket %s/%s: %w", namespace, t.Name, err)
		}
		if (i+1)%500 == 0 {
			fmt.Fprintf(os.Stderr, "created %d of %d demo tickets\n", i+1, n)
		}
	}
	return nil
}

func deleteTickets(client versioned.Interface, namespace string) {
	err := client.FlightsV1().FlightTickets(namespace).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: demoLabel})
	if err != nil {
		fmt.Fprintln(os.Stderr, "deleting the demo tickets:", err)
	}
}

// openWatches reads the API server's gauge of long-running requests and adds
// up the WATCHes of flighttickets that are open right now, in any scope.
func openWatches(ctx context.Context, kube kubernetes.Interface) (int, error) {
	body, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the API server's /metrics: %w", err)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") ||
			!strings.Contains(line, `resource="flighttickets"`) || !strings.Contains(line, `verb="WATCH"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %q: %w", line, err)
		}
		n += int(v)
	}
	return n, sc.Err()
}

// liveHeap is the heap still in use after a full garbage collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

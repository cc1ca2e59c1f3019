package main

import (
	"context"
	"log"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/operator-flow/operator-flow/03-informer-cache/generated/clientset/versioned"
	"github.com/operator-flow/operator-flow/03-informer-cache/generated/informers/externalversions"
	examplelisters "github.com/operator-flow/operator-flow/03-informer-cache/generated/listers/example/v1"
	flightslisters "github.com/operator-flow/operator-flow/03-informer-cache/generated/listers/flights/v1"
)

// operator holds the clients, the listers that read the informers' caches,
// and the settings the handlers need.
type operator struct {
	client    versioned.Interface  // FlightTickets and Loggers, typed (generated)
	kube      kubernetes.Interface // Deployments
	namespace string               // "" watches every namespace
	image     string
	resync    time.Duration

	tickets     flightslisters.FlightTicketLister
	loggers     examplelisters.LoggerLister
	deployments appslisters.DeploymentLister
}

// run starts one informer per kind, waits until each has a full copy of its
// kind, then hands their events to the handlers until ctx ends.
func (o *operator) run(ctx context.Context) {
	// One factory for the generated kinds, one for the built-in ones. A
	// factory shares one informer per kind among everyone who asks for it.
	custom := externalversions.NewSharedInformerFactoryWithOptions(o.client, o.resync,
		externalversions.WithNamespace(o.namespace))
	core := kubeinformers.NewSharedInformerFactoryWithOptions(o.kube, o.resync,
		kubeinformers.WithNamespace(o.namespace),
		// Only the Deployments this operator made: the cache holds what the
		// operator needs, not every Deployment in the cluster.
		kubeinformers.WithTweakListOptions(func(opts *metav1.ListOptions) { opts.LabelSelector = managedBySelector }))

	tickets := custom.Flights().V1().FlightTickets()
	loggers := custom.Example().V1().Loggers()
	deployments := core.Apps().V1().Deployments()
	o.tickets, o.loggers, o.deployments = tickets.Lister(), loggers.Lister(), deployments.Lister()

	// The handlers are added before the informers start, so that each sees
	// every object's ADD as the informer's first pass brings it in. (One
	// added later is sent ADDs replayed from the cache, and gets the resyncs
	// all the same.) Each handler names the caches it reads, and holds its
	// first event until they are full.
	for _, h := range []struct {
		informer cache.SharedIndexInformer
		resource string
		handle   func(context.Context, watch.EventType, metav1.Object) error
		reads    []cache.InformerSynced
	}{
		{tickets.Informer(), "flighttickets", o.handleTicket, []cache.InformerSynced{tickets.Informer().HasSynced}},
		{loggers.Informer(), "loggers", o.handleLogger, []cache.InformerSynced{loggers.Informer().HasSynced, deployments.Informer().HasSynced}},
		{deployments.Informer(), "deployments", o.handleDeployment, []cache.InformerSynced{loggers.Informer().HasSynced, deployments.Informer().HasSynced}},
	} {
		if _, err := h.informer.AddEventHandler(handler(ctx, h.resource, h.handle, h.reads...)); err != nil {
			log.Printf("adding the %s handler: %v", h.resource, err)
			return
		}
	}

	custom.Start(ctx.Done())
	core.Start(ctx.Done())
	defer custom.Shutdown() // on the way out: wait for the informers to stop
	defer core.Shutdown()
	if allTrue(custom.WaitForCacheSync(ctx.Done())) && allTrue(core.WaitForCacheSync(ctx.Done())) {
		log.Print("caches filled: FlightTickets, Loggers, Deployments")
	}
	<-ctx.Done()
}

// handler adapts a handle function to the informer's three callbacks. It
// logs every event like stage 02's loop did, and runs the work right here,
// on the goroutine the informer runs for this handler: the next event of
// this kind waits until it is done (see README: work inside event handlers).
func handler(ctx context.Context, resource string, handle func(context.Context, watch.EventType, metav1.Object) error, reads ...cache.InformerSynced) cache.ResourceEventHandlerFuncs {
	// A Logger's handler reads the Deployment cache. Before that cache is
	// full, "not in the cache" does not mean "does not exist", and the
	// handler would create a Deployment that is already there. So the first
	// event waits until the caches the handler reads are full. (An informer
	// calls its handler from one goroutine, so ready needs no lock.)
	ready := false
	deliver := func(label string, typ watch.EventType, obj any) {
		if !ready {
			if !cache.WaitForCacheSync(ctx.Done(), reads...) {
				return // shutting down
			}
			ready = true
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			log.Printf("%s: %s event with an object of type %T; ignored", resource, label, obj)
			return
		}
		log.Printf("event %-8s %s %s resourceVersion=%s", label, resource, key(m), m.GetResourceVersion())
		// An error because ctx ended (shutting down) is no news.
		if err := handle(ctx, typ, m); err != nil && ctx.Err() == nil {
			log.Printf("error %s %s: %v", resource, key(m), err)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { deliver(string(watch.Added), watch.Added, obj) },
		UpdateFunc: func(old, obj any) {
			// A resync hands over the cached object again, unchanged: the
			// same resourceVersion as before.
			label := string(watch.Modified)
			if resourceVersion(old) == resourceVersion(obj) {
				label = "RESYNC"
			}
			deliver(label, watch.Modified, obj)
		},
		DeleteFunc: func(obj any) {
			// When the watch broke and a re-LIST no longer shows an object,
			// the informer knows it was deleted but not its final state: it
			// hands over a tombstone holding the last state it had cached.
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				log.Printf("%s: %s was deleted while the watch was down", resource, tomb.Key)
				obj = tomb.Obj
			}
			deliver(string(watch.Deleted), watch.Deleted, obj)
		},
	}
}

// allTrue: WaitForCacheSync reports one bool per kind.
func allTrue[K comparable](synced map[K]bool) bool {
	for _, ok := range synced {
		if !ok {
			return false
		}
	}
	return true
}

func resourceVersion(obj any) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetResourceVersion()
	}
	return ""
}

// key is how objects are named in logs: namespace/name.
func key(m metav1.Object) string { return m.GetNamespace() + "/" + m.GetName() }

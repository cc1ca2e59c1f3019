package main

import (
	"context"
	"log"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/operator-flow/operator-flow/04-workqueue/generated/clientset/versioned"
	"github.com/operator-flow/operator-flow/04-workqueue/generated/informers/externalversions"
	examplelisters "github.com/operator-flow/operator-flow/04-workqueue/generated/listers/example/v1"
	flightslisters "github.com/operator-flow/operator-flow/04-workqueue/generated/listers/flights/v1"
)

// operator holds the clients, the listers that read the informers' caches,
// the two controllers (queue and workers, one per kind) and the settings the
// sync handlers need.
type operator struct {
	client    versioned.Interface  // FlightTickets and Loggers, typed (generated)
	kube      kubernetes.Interface // Deployments
	namespace string               // "" watches every namespace
	image     string
	resync    time.Duration
	workers   int // per controller

	tickets     flightslisters.FlightTicketLister
	loggers     examplelisters.LoggerLister
	deployments appslisters.DeploymentLister

	ticketController *controller // its syncHandler is syncTicket
	loggerController *controller // its syncHandler is syncLogger
}

// run starts one informer per kind, whose handlers queue keys, and one
// controller per kind, whose workers sync those keys until ctx ends.
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

	// Each controller waits for the caches its syncHandler reads: a Logger's
	// sync reads the Deployment cache too.
	o.ticketController = newController("flighttickets", o.syncTicket, tickets.Informer().HasSynced)
	o.loggerController = newController("loggers", o.syncLogger, loggers.Informer().HasSynced, deployments.Informer().HasSynced)

	// The handlers are added before the informers start, so that each sees
	// every object's ADD as the informer's first pass brings it in. (One
	// added later is sent ADDs replayed from the cache, and gets the resyncs
	// all the same.) They only queue keys, so they need not wait for the
	// caches to fill; the workers do (controller.Run).
	for _, h := range []struct {
		informer cache.SharedIndexInformer
		resource string
		enqueue  func(metav1.Object)
	}{
		{tickets.Informer(), "flighttickets", o.ticketController.enqueue},
		{loggers.Informer(), "loggers", o.loggerController.enqueue},
		{deployments.Informer(), "deployments", o.handleObject},
	} {
		if _, err := h.informer.AddEventHandler(handler(h.resource, h.enqueue)); err != nil {
			log.Printf("adding the %s handler: %v", h.resource, err)
			return
		}
	}

	custom.Start(ctx.Done())
	core.Start(ctx.Done())
	defer custom.Shutdown() // on the way out: wait for the informers to stop
	defer core.Shutdown()

	// Run returns when ctx ends and its workers have finished their keys.
	var wg sync.WaitGroup
	wg.Go(func() { o.ticketController.Run(ctx, o.workers) })
	wg.Go(func() { o.loggerController.Run(ctx, o.workers) })
	wg.Wait()
}

// handler adapts an enqueue function to the informer's three callbacks. It
// logs every event like the earlier stages did, and then only queues a key:
// the informer's goroutine is free again at once, and the work is done by a
// worker (see controller.go).
func handler(resource string, enqueue func(metav1.Object)) cache.ResourceEventHandlerFuncs {
	deliver := func(label string, obj any) {
		m, ok := obj.(metav1.Object)
		if !ok {
			log.Printf("%s: %s event with an object of type %T; ignored", resource, label, obj)
			return
		}
		log.Printf("event %-8s %s %s resourceVersion=%s", label, resource, key(m), m.GetResourceVersion())
		enqueue(m)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { deliver(string(watch.Added), obj) },
		UpdateFunc: func(old, obj any) {
			// A resync hands over the cached object again, unchanged: the
			// same resourceVersion as before.
			label := string(watch.Modified)
			if resourceVersion(old) == resourceVersion(obj) {
				label = "RESYNC"
			}
			deliver(label, obj)
		},
		DeleteFunc: func(obj any) {
			// When the watch broke and a re-LIST no longer shows an object,
			// the informer knows it was deleted but not its final state: it
			// hands over a tombstone holding the last state it had cached.
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				log.Printf("%s: %s was deleted while the watch was down", resource, tomb.Key)
				obj = tomb.Obj
			}
			deliver(string(watch.Deleted), obj)
		},
	}
}

func resourceVersion(obj any) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetResourceVersion()
	}
	return ""
}

// key is how objects are named in logs and in the queues: namespace/name,
// as cache.MetaNamespaceKeyFunc makes it for a namespaced object, and as
// cache.SplitMetaNamespaceKey takes it apart again.
func key(m metav1.Object) string { return m.GetNamespace() + "/" + m.GetName() }

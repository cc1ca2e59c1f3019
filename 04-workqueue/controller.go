package main

import (
	"context"
	"errors"
	"log"
	"sync"
	"time"

	"golang.org/x/time/rate"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// controller is the work loop of one kind: a queue of the keys
// (namespace/name) of objects that may need work, and workers that take one
// key at a time and run syncHandler on it. The operator runs two, one for
// FlightTickets and one for Loggers, as kube-controller-manager runs one per
// kind. Each kind has workers of its own, so a flood of one kind never
// starves the other, and a key stays a plain namespace/name, with no kind to
// encode into it and parse out again.
type controller struct {
	name string // the kind's resource, e.g. "loggers": in every log line
	// queue holds keys, not objects or events: by the time a worker gets to
	// a key, the object may have changed again, and the worker reads it as
	// it is now from the informer's cache. So a key is in the queue at most
	// once, and ten changes to one object while it waits make one sync.
	queue workqueue.TypedRateLimitingInterface[string]
	// limiter says how long a failed key waits before it is tried again.
	// The queue was built with it, so both count the same failures.
	limiter workqueue.TypedRateLimiter[string]
	// syncHandler makes the world match the object behind one key. It
	// returns nil when done; an error to be tried again later; or an error
	// wrapping errPermanent when trying again cannot help.
	syncHandler func(ctx context.Context, key string) error
	// synced report whether the informers syncHandler reads from have
	// filled their caches.
	synced []cache.InformerSynced
}

// errPermanent marks an error that no retry can fix, such as a spec the
// operator cannot act on. Its key is dropped until the object changes.
var errPermanent = errors.New("permanent error")

func newController(name string, syncHandler func(context.Context, string) error, synced ...cache.InformerSynced) *controller {
	limiter := newRateLimiter()
	return &controller{
		name:    name,
		limiter: limiter,
		// The name labels the queue's metrics (depth, wait, retries) when a
		// metrics provider is registered; this operator registers none.
		queue:       workqueue.NewTypedRateLimitingQueueWithConfig(limiter, workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
		syncHandler: syncHandler,
		synced:      synced,
	}
}

// newRateLimiter decides how long a failed key waits before its next try:
// the longer of two waits. The numbers are client-go's defaults
// (workqueue.DefaultTypedControllerRateLimiter), written out to be read.
// Stage 05's controller-runtime keeps only the per-key wait: its priority
// queue has no overall bucket.
//
//   - Per key, exponential: 5 ms after the first failure, doubling with each
//     further one: 10 ms, 20 ms, ..., 1.28 s after the 9th, 82 s after the
//     15th, and at most 1000 s (about 17 minutes) from the 19th on. Success
//     resets it (Forget). So a key that keeps failing costs about ten
//     requests in its first 5 seconds and then fewer and fewer: never a hot
//     loop, and a short outage is retried within milliseconds.
//   - Overall, a token bucket: 10 retries a second, in bursts of up to 100.
//     When many keys fail at once (the API server went away), their
//     retries are spread out instead of all arriving together.
//
// It paces retries only. A key queued by an event is handed out at once;
// the requests that syncs send are paced by the client's QPS (config.go).
func newRateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 1000*time.Second),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// Run waits until the caches are full, then runs workers until ctx ends. It
// returns once every worker is back from the key in its hands (ctx cancels
// the requests that sync was waiting for).
func (c *controller) Run(ctx context.Context, workers int) {
	// A worker that ran before the caches are full would take "not in the
	// cache" for "does not exist", and create a Deployment that is there.
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return // ctx ended first
	}
	log.Printf("%s: caches synced; starting %d workers", c.name, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { c.runWorker(ctx) })
	}
	<-ctx.Done()
	// Workers stop taking keys now (runWorker checks ctx); ShutDown wakes
	// those waiting in Get. Keys still queued are left behind: they are only
	// names, and the next start finds their objects again.
	c.queue.ShutDown()
	wg.Wait()
}

// runWorker takes one key after another until the operator stops.
func (c *controller) runWorker(ctx context.Context) {
	for ctx.Err() == nil && c.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem takes one key from the queue, syncs it, and tells the
// queue how that went. It returns false once the queue is shut down.
func (c *controller) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get() // blocks until a key is ready
	if shutdown {
		return false
	}
	// Until Done, no other worker gets this key: one object is never synced
	// by two workers at once. A key queued meanwhile is held back, and
	// handed out once more after Done.
	defer c.queue.Done(key)

	err := c.syncHandler(ctx, key)
	switch {
	case err == nil:
		// Forget the key's failures, so that its next error starts again
		// at the shortest wait.
		c.queue.Forget(key)
	case ctx.Err() != nil:
		// Shutting down: the error is the cancelled request, not news.
	case errors.Is(err, errPermanent):
		c.queue.Forget(key)
		log.Printf("dropping %s %s: %v (trying again cannot help; the next change to it will be synced)", c.name, key, err)
	default:
		// Try again later. queue.AddRateLimited(key) does exactly this;
		// it is written out so that the log can say how long the key waits.
		wait := c.limiter.When(key)
		c.queue.AddAfter(key, wait)
		log.Printf("error %s %s: %v; retry %d in %s", c.name, key, err, c.queue.NumRequeues(key), wait)
	}
	return true
}

// The syncHandlers come next in the flow: syncTicket (tickets.go) and
// syncLogger (loggers.go), each ending in its status update. Below: how keys
// get into the queues (the Deployments' handler, handleObject, is in
// loggers.go).

// enqueue queues the key of a ticket or Logger that an event was about.
// Whatever happened to the object, a worker will look at all of it.
func (c *controller) enqueue(obj metav1.Object) {
	c.queue.Add(key(obj))
}

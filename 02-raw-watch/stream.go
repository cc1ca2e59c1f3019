package main

import (
	"context"
	"log"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// defaultWatchTimeout is how long one watch request lasts. The API server
// ends every watch sooner or later anyway; asking for an end after a few
// minutes (client-go's informers pick 5 to 10) makes resuming a routine,
// tested path instead of a rare one.
const defaultWatchTimeout = 5 * time.Minute

// stream is one watched resource: how to LIST and WATCH it, what to do with
// its events, and how far it has got (the resourceVersion of the last event).
type stream struct {
	resource string
	list     func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch    func(context.Context, metav1.ListOptions) (watch.Interface, error)
	handle   func(ctx context.Context, typ watch.EventType, obj metav1.Object) error
	timeout  time.Duration

	rv string          // where to resume; "" means: LIST first
	w  watch.Interface // the open watch, nil until connect succeeds
}

// events is the channel of the open watch. Receiving from a nil channel
// blocks forever, which is right for a stream that is not connected.
func (s *stream) events() <-chan watch.Event {
	if s.w == nil {
		return nil
	}
	return s.w.ResultChan()
}

// connect opens the watch. With a resourceVersion it resumes where the last
// watch stopped, so no event is missed or repeated. Without one (at start,
// or after 410 Gone) it LISTs first, hands every object to the handler as
// ADDED, and watches from the list's resourceVersion. Other errors are
// retried with a growing pause, until ctx ends.
func (s *stream) connect(ctx context.Context) {
	for pause := time.Second; ctx.Err() == nil; pause = min(2*pause, 30*time.Second) {
		err := s.tryConnect(ctx)
		if err == nil {
			return
		}
		if isTooOld(err) {
			s.startOver(err)
			continue
		}
		log.Printf("watch %s: %v; trying again in %s", s.resource, err, pause)
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
}

// tryConnect is one attempt at what connect does: LIST first if there is no
// resourceVersion to resume from, then open the watch.
func (s *stream) tryConnect(ctx context.Context) error {
	if s.rv == "" {
		list, err := s.list(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		rv := listResourceVersion(list)
		log.Printf("LIST %s: %d objects at resourceVersion %s", s.resource, meta.LenList(list), rv)
		// The objects are handed over as if they had just been added. Objects
		// deleted while nobody watched are not in the list, and their DELETED
		// events are lost for good: nothing here remembers them.
		err = meta.EachListItem(list, func(obj runtime.Object) error {
			s.deliver(ctx, watch.Added, obj)
			return nil
		})
		if err != nil {
			return err
		}
		s.rv = rv
	}
	timeout := int64(s.timeout.Seconds())
	w, err := s.watch(ctx, metav1.ListOptions{
		ResourceVersion: s.rv,
		// Bookmarks are empty events that only move the resourceVersion on,
		// so that a resume after a quiet spell is not "too old".
		AllowWatchBookmarks: true,
		TimeoutSeconds:      &timeout,
	})
	if err != nil {
		return err
	}
	s.w = w
	return nil
}

// receive handles what one receive from the watch channel gave.
func (s *stream) receive(ctx context.Context, ev watch.Event, open bool) {
	if ctx.Err() != nil {
		return // shutting down: the watch ends because we asked it to
	}
	switch {
	case !open:
		log.Printf("watch %s: closed by the API server; resuming at resourceVersion %s", s.resource, s.rv)
		s.connect(ctx)
	case ev.Type == watch.Error:
		s.w.Stop()
		if err := apierrors.FromObject(ev.Object); isTooOld(err) {
			s.startOver(err)
		} else {
			log.Printf("watch %s: error event: %v; resuming at resourceVersion %s", s.resource, err, s.rv)
		}
		s.connect(ctx)
	case ev.Type == watch.Bookmark:
		s.rv = resourceVersion(ev.Object)
	default: // ADDED, MODIFIED, DELETED
		s.rv = resourceVersion(ev.Object)
		s.deliver(ctx, ev.Type, ev.Object)
	}
}

// deliver logs one event and hands it to the handler. A handler's error is
// logged with the object's key and that is all: no retry (see README).
func (s *stream) deliver(ctx context.Context, typ watch.EventType, obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		log.Printf("watch %s: %s event without object metadata: %v", s.resource, typ, err)
		return
	}
	log.Printf("event %-8s %s %s resourceVersion=%s", typ, s.resource, key(m), m.GetResourceVersion())
	// An error because ctx ended (shutting down) is no news.
	if err := s.handle(ctx, typ, m); err != nil && ctx.Err() == nil {
		log.Printf("error %s %s: %v", s.resource, key(m), err)
	}
}

// startOver forgets the resourceVersion, so the next connect LISTs.
func (s *stream) startOver(err error) {
	log.Printf("watch %s: resourceVersion %s is too old (%v); starting over from a fresh LIST", s.resource, s.rv, err)
	s.rv = ""
}

func (s *stream) stop() {
	if s.w != nil {
		s.w.Stop()
	}
}

// isTooOld: the API server no longer keeps history back to the
// resourceVersion asked for (410 Gone, "too old resource version").
func isTooOld(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

func resourceVersion(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

func listResourceVersion(list runtime.Object) string {
	m, err := meta.ListAccessor(list)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// key is how objects are named in logs: namespace/name.
func key(m metav1.Object) string { return m.GetNamespace() + "/" + m.GetName() }

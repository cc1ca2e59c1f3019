package main

import (
	"bytes"
	"context"
	"log"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// These tests run the real loop against client-go's fake clients, which keep
// objects in memory and let a test play the API server's part in a watch.

// logs captures the standard logger for one test.
type logs struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logs) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func captureLogs(t *testing.T) *logs {
	l := &logs{}
	log.SetOutput(l)
	t.Cleanup(func() { log.SetOutput(nil) })
	return l
}

func fakeOperator(objects ...runtime.Object) (*operator, *dynamicfake.FakeDynamicClient) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		ticketsGVR: "FlightTicketList",
		loggersGVR: "LoggerList",
	}, objects...)
	return &operator{dyn: dyn, kube: kubefake.NewClientset(), image: "busybox:1.37", watchTimeout: time.Minute}, dyn
}

// start runs the loop until the test ends.
func start(t *testing.T, o *operator) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { o.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func ticket(name string, number any) *unstructured.Unstructured {
	u := ticketObject(map[string]any{"from": "Oslo", "to": "Bergen", "number": number})
	u.SetName(name)
	return u
}

func phase(t *testing.T, o *operator, name string) string {
	u, err := o.dyn.Resource(ticketsGVR).Namespace("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	return p
}

// One ticket with a wrong-typed field (as if written while validation was
// off) must not stop the others: its error is logged with its key, and the
// next ticket is booked.
func TestBadObjectIsLoggedAndSkipped(t *testing.T) {
	l := captureLogs(t)
	o, _ := fakeOperator(ticket("a-bad", "two"), ticket("b-good", int64(2)))
	start(t, o)
	eventually(t, "b-good to be booked", func() bool { return phase(t, o, "b-good") == phaseBooked })
	if !strings.Contains(l.String(), "error flighttickets ns/a-bad: bad field: .spec.number") {
		t.Errorf("no error naming ns/a-bad and its field in the log:\n%s", l)
	}
	if got := phase(t, o, "a-bad"); got != "" {
		t.Errorf("a-bad has phase %q; a ticket that cannot be read must be left alone", got)
	}
}

// scriptedWatches replaces the fake's watch on flighttickets with watchers
// the test drives, and records the resourceVersion each watch started from
// and how many LISTs there were.
type scriptedWatches struct {
	mu       sync.Mutex
	watchers chan *watch.FakeWatcher
	from     []string
	lists    int
}

func scriptTicketWatches(dyn *dynamicfake.FakeDynamicClient) *scriptedWatches {
	s := &scriptedWatches{watchers: make(chan *watch.FakeWatcher, 10)}
	dyn.PrependWatchReactor("flighttickets", func(a clienttesting.Action) (bool, watch.Interface, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.from = append(s.from, a.(clienttesting.WatchActionImpl).GetWatchRestrictions().ResourceVersion)
		w := watch.NewFake()
		s.watchers <- w
		return true, w, nil
	})
	dyn.PrependReactor("list", "flighttickets", func(clienttesting.Action) (bool, runtime.Object, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lists++
		list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "flights.com/v1", "kind": "FlightTicketList"}}
		list.SetResourceVersion("100")
		return true, list, nil
	})
	return s
}

func (s *scriptedWatches) next(t *testing.T) *watch.FakeWatcher {
	t.Helper()
	select {
	case w := <-s.watchers:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("the operator opened no new watch")
		return nil
	}
}

func (s *scriptedWatches) state() (lists int, from []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lists, append([]string(nil), s.from...)
}

func TestWatchResumesFromLastResourceVersion(t *testing.T) {
	captureLogs(t)
	o, dyn := fakeOperator()
	s := scriptTicketWatches(dyn)
	start(t, o)

	w := s.next(t)
	tk := ticket("a", int64(1))
	tk.SetResourceVersion("105")
	w.Add(tk)
	w.Stop() // the API server ends the watch: the result channel closes
	s.next(t)

	lists, from := s.state()
	if lists != 1 || len(from) != 2 || from[0] != "100" || from[1] != "105" {
		t.Errorf("lists=%d, watches from %q; want 1 LIST, then watches from the list's resourceVersion 100 and the last event's 105", lists, from)
	}
}

func TestTooOldResourceVersionStartsOverWithList(t *testing.T) {
	l := captureLogs(t)
	o, dyn := fakeOperator()
	s := scriptTicketWatches(dyn)
	start(t, o)

	w := s.next(t)
	// What the API server sends when it no longer has history that old.
	w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 100 (250)"})
	s.next(t)

	lists, from := s.state()
	if lists != 2 || len(from) != 2 || from[1] != "100" {
		t.Errorf("lists=%d, watches from %q; want a second LIST and a watch from its resourceVersion", lists, from)
	}
	if !strings.Contains(l.String(), "starting over from a fresh LIST") {
		t.Errorf("the log does not say why it LISTs again:\n%s", l)
	}
}

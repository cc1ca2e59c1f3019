package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	examplev1 "github.com/operator-flow/operator-flow/04-workqueue/api/example/v1"
	flightsv1 "github.com/operator-flow/operator-flow/04-workqueue/api/flights/v1"
	"github.com/operator-flow/operator-flow/04-workqueue/generated/clientset/versioned/fake"
	"github.com/operator-flow/operator-flow/04-workqueue/generated/clientset/versioned/scheme"
	examplelisters "github.com/operator-flow/operator-flow/04-workqueue/generated/listers/example/v1"
	flightslisters "github.com/operator-flow/operator-flow/04-workqueue/generated/listers/flights/v1"
)

func TestBookingMessage(t *testing.T) {
	got := bookingMessage(flightsv1.FlightTicketSpec{From: "Amsterdam", To: "Lisbon", Number: 2})
	if want := "Booked 2 seat(s) from Amsterdam to Lisbon"; got != want {
		t.Errorf("bookingMessage = %q, want %q", got, want)
	}
}

// The lister hands out the cache's own object. syncTicket must write a copy
// and leave the cached one as the informer stored it.
func TestSyncTicketDoesNotChangeTheCache(t *testing.T) {
	ticket := &flightsv1.FlightTicket{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "1"},
		Spec:       flightsv1.FlightTicketSpec{From: "Oslo", To: "Bergen", Number: 1},
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := indexer.Add(ticket); err != nil {
		t.Fatal(err)
	}
	client := fake.NewSimpleClientset(ticket.DeepCopy())
	o := &operator{client: client, tickets: flightslisters.NewFlightTicketLister(indexer)}

	if err := o.syncTicket(context.Background(), "ns/a"); err != nil {
		t.Fatal(err)
	}
	written, err := client.FlightsV1().FlightTickets("ns").Get(context.Background(), "a", metav1.GetOptions{})
	if err != nil || written.Status.Phase != flightsv1.PhaseBooked {
		t.Fatalf("the ticket was not booked: %+v, %v", written, err)
	}
	cached, _, _ := indexer.GetByKey("ns/a")
	if got := cached.(*flightsv1.FlightTicket).Status; got != (flightsv1.FlightTicketStatus{}) {
		t.Errorf("the cached ticket was changed in place: status %+v", got)
	}
}

// A delete the informer learned of only from a re-LIST arrives as a
// tombstone; the handler gets the last known object out of it and queues
// its key.
func TestDeleteHandlerUnwrapsTombstones(t *testing.T) {
	c := newController("loggers", nil)
	defer c.queue.ShutDown()
	last := &examplev1.Logger{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "ns"}}
	handler("loggers", c.enqueue).OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: last})
	if c.queue.Len() != 1 {
		t.Fatalf("%d keys queued, want 1", c.queue.Len())
	}
	if got, _ := c.queue.Get(); got != "ns/gone" {
		t.Errorf("queued %q, want ns/gone", got)
	}
}

// A Deployment event queues its Logger, named by the instance label.
func TestHandleObjectQueuesTheLogger(t *testing.T) {
	o := &operator{loggerController: newController("loggers", nil)}
	defer o.loggerController.queue.ShutDown()
	d := desiredDeployment("ns", "heartbeat", examplev1.LoggerSpec{Name: "beat", TimeInterval: 5}, "busybox:1.37")
	handler("deployments", o.handleObject).OnUpdate(d, d)
	if got, _ := o.loggerController.queue.Get(); got != "ns/heartbeat" {
		t.Errorf("queued %q, want the Logger's key ns/heartbeat", got)
	}
}

// A spec the operator cannot act on is a permanent error, and nothing is
// written.
func TestSyncLoggerRefusesASpecItCannotActOn(t *testing.T) {
	for _, spec := range []examplev1.LoggerSpec{
		{Name: "spin", TimeInterval: 0},
		{Name: "negative", TimeInterval: 5, Replicas: ptr.To[int32](-1)},
	} {
		l := &examplev1.Logger{ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Namespace: "ns"}, Spec: spec}
		loggers := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		if err := loggers.Add(l); err != nil {
			t.Fatal(err)
		}
		client := fake.NewSimpleClientset(l.DeepCopy())
		o := &operator{client: client, loggers: examplelisters.NewLoggerLister(loggers)}
		err := o.syncLogger(context.Background(), "ns/"+spec.Name)
		if !errors.Is(err, errPermanent) {
			t.Errorf("Logger %s: err = %v, want a permanent error", spec.Name, err)
		}
		if n := len(client.Actions()); n != 0 {
			t.Errorf("Logger %s: %d requests, want none", spec.Name, n)
		}
	}
}

// A Logger that is gone takes its Deployment with it, whichever event
// queued its key; with no Deployment in the cache, nothing is sent.
func TestSyncLoggerDeletesTheDeploymentOfAGoneLogger(t *testing.T) {
	d := desiredDeployment("ns", "gone", examplev1.LoggerSpec{Name: "gone", TimeInterval: 5}, "busybox:1.37")
	d.UID = "uid-1"
	deployments := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := deployments.Add(d); err != nil {
		t.Fatal(err)
	}
	kube := kubefake.NewSimpleClientset(d.DeepCopy())
	o := &operator{
		kube:        kube,
		loggers:     examplelisters.NewLoggerLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})),
		deployments: appslisters.NewDeploymentLister(deployments),
	}
	if err := o.syncLogger(context.Background(), "ns/gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.AppsV1().Deployments("ns").Get(context.Background(), "logger-gone", metav1.GetOptions{}); err == nil {
		t.Error("logger-gone still exists")
	}
	if err := deployments.Delete(d); err != nil {
		t.Fatal(err)
	}
	kube.ClearActions()
	if err := o.syncLogger(context.Background(), "ns/gone"); err != nil {
		t.Fatal(err)
	}
	if n := len(kube.Actions()); n != 0 {
		t.Errorf("with no Deployment left in the cache, %d requests were sent; want none", n)
	}
}

// What typed clients cost: the JSON of a LIST is decoded into Go structs as
// a whole, so one object with a field of the wrong type (possible only if it
// was stored before the CRD's schema said otherwise) fails the whole LIST.
// The informer logs that and retries the LIST, and serves no object of the
// kind until the bad one is fixed. Stage 02, reading unstructured JSON,
// rejected only the bad object.
func TestOneWrongTypedObjectFailsTheTypedList(t *testing.T) {
	list := `{"apiVersion":"flights.com/v1","kind":"FlightTicketList","metadata":{"resourceVersion":"7"},"items":[
		{"apiVersion":"flights.com/v1","kind":"FlightTicket","metadata":{"name":"good","namespace":"ns"},"spec":{"from":"Oslo","to":"Bergen","number":1}},
		{"apiVersion":"flights.com/v1","kind":"FlightTicket","metadata":{"name":"bad","namespace":"ns"},"spec":{"from":"Oslo","to":"Bergen","number":"two"}}]}`
	_, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(list), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "number") {
		t.Fatalf("decoding a list with one wrong-typed number: err = %v, want an error about the number", err)
	}
}

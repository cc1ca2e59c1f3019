package main

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	examplev1 "github.com/operator-flow/operator-flow/03-informer-cache/api/example/v1"
	flightsv1 "github.com/operator-flow/operator-flow/03-informer-cache/api/flights/v1"
	"github.com/operator-flow/operator-flow/03-informer-cache/generated/clientset/versioned/fake"
	"github.com/operator-flow/operator-flow/03-informer-cache/generated/clientset/versioned/scheme"
	flightslisters "github.com/operator-flow/operator-flow/03-informer-cache/generated/listers/flights/v1"
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

	if err := o.syncTicket(context.Background(), "ns", "a"); err != nil {
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
// tombstone; the handler gets the last known object out of it.
func TestDeleteHandlerUnwrapsTombstones(t *testing.T) {
	var gotType watch.EventType
	var gotName string
	h := handler(context.Background(), "loggers", func(_ context.Context, typ watch.EventType, obj metav1.Object) error {
		gotType, gotName = typ, obj.GetName()
		return nil
	})
	last := &examplev1.Logger{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "ns"}}
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/gone", Obj: last})
	if gotType != watch.Deleted || gotName != "gone" {
		t.Errorf("handler got %s %q, want DELETED \"gone\"", gotType, gotName)
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

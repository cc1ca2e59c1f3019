package main

import (
	"encoding/json"
	"runtime/debug"
	"testing"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	flightsv1 "github.com/operator-flow/operator-flow/06-status-and-owners/api/flights/v1"
)

// bookedTicket decodes a booked ticket from JSON, as the cache's informer
// does: every string in it is a fresh allocation.
func bookedTicket(t *testing.T, name, uid string) *flightsv1.FlightTicket {
	t.Helper()
	doc := `{"apiVersion":"flights.com/v1","kind":"FlightTicket",
	  "metadata":{"name":"` + name + `","namespace":"travel","uid":"` + uid + `","resourceVersion":"7",
	    "finalizers":["flights.com/release-seats"],
	    "managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"flights.com/v1"}]},
	  "spec":{"from":"Amsterdam","to":"Lisbon","number":2},
	  "status":{"phase":"Booked","message":"Booked 2 seat(s) from Amsterdam to Lisbon",
	    "conditions":[{"type":"Booked","status":"True","reason":"SeatsHeld","message":"Booked 2 seat(s) from Amsterdam to Lisbon","lastTransitionTime":"2026-11-24T08:00:00Z"}]}}`
	var ticket flightsv1.FlightTicket
	if err := json.Unmarshal([]byte(doc), &ticket); err != nil {
		t.Fatal(err)
	}
	return &ticket
}

// transformAll runs the cache's transform on each ticket, as the informer
// does before it stores one.
func transformAll(t *testing.T, transform toolscache.TransformFunc, tickets ...*flightsv1.FlightTicket) {
	t.Helper()
	for _, ticket := range tickets {
		if _, err := transform(ticket); err != nil {
			t.Fatal(err)
		}
	}
}

// noCollections turns the garbage collector off until the test ends. A
// collection between two transforms may let the unique package start a new
// shared copy of a value (see internTicketStrings), which is fine for the
// operator but would make a test of sharing flaky.
func noCollections(t *testing.T) {
	previous := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(previous) })
}

// sameCopy reports whether two strings share their bytes, not just their value.
func sameCopy[S ~string](a, b S) bool {
	return len(a) > 0 && unsafe.StringData(string(a)) == unsafe.StringData(string(b))
}

func TestCacheTransformSharesRepeatedStrings(t *testing.T) {
	noCollections(t)
	a, b := bookedTicket(t, "a", "uid-a"), bookedTicket(t, "b", "uid-b")
	if sameCopy(a.Spec.From, b.Spec.From) {
		t.Fatal("two decoded tickets already share a string; the test cannot tell interning apart")
	}
	transformAll(t, cacheTransform(true, true), a, b)

	shared := map[string][2]string{
		"namespace":                    {a.Namespace, b.Namespace},
		"finalizer":                    {a.Finalizers[0], b.Finalizers[0]},
		"spec.from":                    {a.Spec.From, b.Spec.From},
		"spec.to":                      {a.Spec.To, b.Spec.To},
		"status.phase":                 {string(a.Status.Phase), string(b.Status.Phase)},
		"status.message":               {a.Status.Message, b.Status.Message},
		"status.conditions[0].type":    {a.Status.Conditions[0].Type, b.Status.Conditions[0].Type},
		"status.conditions[0].status":  {string(a.Status.Conditions[0].Status), string(b.Status.Conditions[0].Status)},
		"status.conditions[0].reason":  {a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason},
		"status.conditions[0].message": {a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
	}
	for field, pair := range shared {
		if !sameCopy(pair[0], pair[1]) {
			t.Errorf("%s: the two tickets hold separate copies of %q; want one shared copy", field, pair[0])
		}
	}
	// The values are unchanged, and each ticket keeps its own identity.
	if a.Spec.From != "Amsterdam" || a.Status.Conditions[0].Reason != flightsv1.ReasonSeatsHeld {
		t.Errorf("interning changed a value: from %q, reason %q", a.Spec.From, a.Status.Conditions[0].Reason)
	}
	if a.Name != "a" || b.Name != "b" || a.UID != "uid-a" || b.UID != "uid-b" {
		t.Errorf("names or UIDs changed: %q/%q, %q/%q", a.Name, b.Name, a.UID, b.UID)
	}
	if a.ManagedFields != nil || b.ManagedFields != nil {
		t.Error("managedFields survived the transform")
	}
}

func TestCacheTransformFlags(t *testing.T) {
	noCollections(t)
	// --intern-strings=false: managedFields go, strings stay the decoder's.
	a, b := bookedTicket(t, "a", "uid-a"), bookedTicket(t, "b", "uid-b")
	transformAll(t, cacheTransform(true, false), a, b)
	if a.ManagedFields != nil {
		t.Error("--strip-managed-fields: managedFields survived")
	}
	if sameCopy(a.Spec.From, b.Spec.From) {
		t.Error("--intern-strings=false: the tickets share a string")
	}

	// --strip-managed-fields=false: managedFields stay, strings are shared.
	c, d := bookedTicket(t, "c", "uid-c"), bookedTicket(t, "d", "uid-d")
	transformAll(t, cacheTransform(false, true), c, d)
	if len(c.ManagedFields) != 1 {
		t.Errorf("--strip-managed-fields=false: %d managedFields entries left, want 1", len(c.ManagedFields))
	}
	if !sameCopy(c.Spec.From, d.Spec.From) {
		t.Error("--intern-strings: the tickets hold separate copies of spec.from")
	}
}

func TestCacheTransformOtherKinds(t *testing.T) {
	// A Logger's Deployment only loses its managedFields.
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "heartbeat",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "operator-flow-06"}}}}
	got, err := cacheTransform(true, true)(d)
	if err != nil {
		t.Fatal(err)
	}
	if got != d || d.ManagedFields != nil || d.Name != "heartbeat" {
		t.Errorf("the Deployment came out as %+v; want the same object without managedFields", got)
	}
}

func TestGCPace(t *testing.T) {
	// SetGCPercent returns the pace it replaces: this reads it and puts
	// the test binary's own pace back at the end.
	previous := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(previous) })

	t.Setenv("GOGC", "")
	if got := setGCPace(); got != "75" {
		t.Errorf("GOGC unset: setGCPace reported %q, want 75", got)
	}
	if pace := debug.SetGCPercent(100); pace != defaultGCPercent {
		t.Errorf("GOGC unset: the collector's pace is %d, want %d", pace, defaultGCPercent)
	}

	// GOGC in the environment wins: the runtime read it at start, and
	// setGCPace leaves the pace alone.
	t.Setenv("GOGC", "120")
	if got := setGCPace(); got != "120" {
		t.Errorf("GOGC=120: setGCPace reported %q, want 120", got)
	}
	if pace := debug.SetGCPercent(100); pace != 100 {
		t.Errorf("GOGC=120: setGCPace changed the pace to %d; it must leave it", pace)
	}
}

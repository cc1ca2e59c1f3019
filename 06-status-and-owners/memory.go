package main

import (
	"os"
	"runtime/debug"
	"strconv"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	flightsv1 "github.com/operator-flow/operator-flow/06-status-and-owners/api/flights/v1"
)

// Two things keep the operator's memory down with thousands of tickets: a
// cache that holds less per object (cacheTransform), and a garbage collector
// that lets the heap grow less past what is live (setGCPace). README.md has
// what each saves, measured by make bench-memory.

// defaultGCPercent is the garbage collector's pace unless GOGC is set.
const defaultGCPercent = 75

// setGCPace sets the collector's pace to defaultGCPercent, unless the
// environment sets GOGC, and returns the pace in effect.
//
// The collector runs when the heap has grown by GOGC percent of what was
// live after the last collection, so the heap peaks at about 1 + GOGC/100
// times what is live: twice at Go's default of 100. Most of the time, what
// is live is mainly the cache. A burst of bookings adds a copy of every
// Booked Event, which client-go keeps for six to twelve minutes to fold
// repeats into a series: booking 10,000 tickets at once, at 100, the
// operator peaked just over the course's budget of 80 MiB. 75 keeps it
// under, for more frequent collections whose CPU cost stayed within the
// noise between runs. README.md has the measurements, and what lower paces
// cost.
func setGCPace() string {
	if env := os.Getenv("GOGC"); env != "" {
		return env // the runtime has read it already
	}
	debug.SetGCPercent(defaultGCPercent)
	return strconv.Itoa(defaultGCPercent)
}

// cacheTransform returns what every object goes through after it is decoded
// and before it enters the cache. The cache holds every ticket for as long
// as the operator runs, so what is trimmed here is trimmed 10,000 times with
// 10,000 tickets.
//
//   - stripManagedFields drops metadata.managedFields: the record of which
//     client set which field, for server-side apply. It is often the largest
//     part of a small object, and the operator never reads it.
//   - internStrings gives the tickets one shared copy of the strings they
//     all repeat (internTicketStrings).
func cacheTransform(stripManagedFields, internStrings bool) toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(obj any) (any, error) {
		if stripManagedFields {
			var err error
			if obj, err = strip(obj); err != nil {
				return nil, err
			}
		}
		if t, ok := obj.(*flightsv1.FlightTicket); ok && internStrings {
			internTicketStrings(t)
		}
		return obj, nil
	}
}

// internTicketStrings replaces the strings that are the same in many tickets
// with one shared copy. The JSON decoder allocates every string it reads, so
// 10,000 tickets hold 10,000 copies of the finalizer's name, of "Amsterdam",
// of "SeatsHeld". unique.Make returns the one copy of a value the whole
// process shares, and the decoder's copy becomes garbage at once.
//
// Only strings that repeat across tickets are worth it: the namespace, the
// route, what the operator writes into the status. The name, UID and
// resourceVersion of each ticket are its own and stay as decoded. (The
// decoder empties apiVersion and kind of typed objects; nothing to share.)
//
// This is safe because Go strings are immutable: nothing can change the
// shared copy through one ticket. No unique.Handle is kept, so after a
// collection the package may forget a value and start a new shared copy
// for the tickets decoded next; the older tickets keep theirs, and a copy
// no ticket uses any more is collected like any other string.
func internTicketStrings(t *flightsv1.FlightTicket) {
	intern(&t.Namespace)
	for i := range t.Finalizers {
		intern(&t.Finalizers[i])
	}
	intern(&t.Spec.From)
	intern(&t.Spec.To)
	intern(&t.Status.Phase)
	intern(&t.Status.Message)
	for i := range t.Status.Conditions {
		internCondition(&t.Status.Conditions[i])
	}
}

func internCondition(c *metav1.Condition) {
	intern(&c.Type)
	intern(&c.Status)
	intern(&c.Reason)
	intern(&c.Message)
}

// intern points *s at the process's one copy of its value.
func intern[S ~string](s *S) { *s = unique.Make(*s).Value() }

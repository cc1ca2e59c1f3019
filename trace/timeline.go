package trace

import (
	"sort"
	"strings"
	"time"
)

// Timeline is a trace ready to show: its hops in time order, long runs
// folded, and the names of its participants.
type Timeline struct {
	Stage  Stage
	Object Object
	Start  time.Time // the kubectl apply: +0.000s
	Hops   []Hop
}

// Build merges the hops of every source in time order, keeps those from start
// to end, and folds runs of the same hop.
func Build(stage Stage, o Object, start, end time.Time, sources ...[]Hop) Timeline {
	var all []Hop
	for _, s := range sources {
		all = append(all, inWindow(s, start, end)...)
	}
	if !stage.Converts(o) {
		// One version: naming it says nothing.
		for i := range all {
			all[i].Version = ""
		}
	}
	// Stable: hops with the same time keep their source's order.
	at := handedOverAt(all)
	sort.SliceStable(all, func(i, j int) bool { return at(all[i]).Before(at(all[j])) })
	markUnchanged(all)
	return Timeline{Stage: stage, Object: o, Start: start, Hops: Fold(all)}
}

// handedOverAt returns when a hop happened, for ordering. An event handed
// over inside the operator (its log line, to the microsecond) cannot come
// before the operator received it (its recording, to the nanosecond): it is
// placed after it.
func handedOverAt(hops []Hop) func(Hop) time.Time {
	received := map[string]time.Time{}
	for _, h := range hops {
		if h.From == APIServer && h.To == Watch {
			received[h.Verb+" "+h.Resource+"/"+h.Name+" "+h.RV] = h.Time
		}
	}
	return func(h Hop) time.Time {
		if h.From == Watch && h.To != APIServer {
			if t, ok := received[h.Verb+" "+h.Resource+"/"+h.Name+" "+h.RV]; ok && !t.Before(h.Time) {
				return t.Add(time.Nanosecond)
			}
		}
		return h.Time
	}
}

// markUnchanged finds the writes that stored nothing: answered with the
// resourceVersion the object had already (in its last event or write), the
// API server found nothing to change and wrote nothing to etcd. Except once
// someone has asked to delete the object: then the write that removes its
// last finalizer is answered with the old resourceVersion too, and the
// object goes.
func markUnchanged(hops []Hop) {
	last, deleting := map[string]string{}, map[string]bool{}
	for i, h := range hops {
		if h.IsNote() {
			continue
		}
		key := strings.SplitN(h.Resource, "/", 2)[0] + "/" + h.Name
		if h.To == APIServer && h.Verb == "DELETE" {
			deleting[key] = true
		}
		if h.RV == "" {
			continue
		}
		if h.Stored && last[key] == h.RV && !deleting[key] {
			hops[i].Stored, hops[i].Unchanged = false, true
		}
		last[key] = h.RV
	}
}

// Fold folds runs of hops that differ only in their object's name and
// resourceVersion (kwok marking each pod Running, the Deployment controller
// updating the status again and again) into one hop with a count.
func Fold(hops []Hop) []Hop {
	var out []Hop
	names := map[string]bool{}
	for _, h := range hops {
		if h.Count == 0 {
			h.Count = 1
		}
		if n := len(out); n > 0 && sameKind(out[n-1], h) {
			last := &out[n-1]
			last.Count += h.Count
			if !names[h.Name] {
				names[h.Name] = true
				last.Names = len(names)
			}
			if h.RV != "" {
				last.LastRV = h.RV
			}
			continue
		}
		names = map[string]bool{h.Name: true}
		h.Names = 1
		out = append(out, h)
	}
	return out
}

func sameKind(a, b Hop) bool {
	return a.From == b.From && a.To == b.To && a.Verb == b.Verb && a.Resource == b.Resource && a.Version == b.Version &&
		a.Code == b.Code && a.Stored == b.Stored && a.Via == b.Via && !a.IsNote()
}

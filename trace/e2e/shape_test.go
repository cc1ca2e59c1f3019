package e2e

import (
	"strings"
	"testing"

	"github.com/operator-flow/operator-flow/trace"
)

// op stands for either part of the operator that talks to the API server:
// its watch (LIST, WATCH) or its worker (everything else).
const op = "operator"

// hop is a pattern for a trace.Hop; an empty field matches anything.
type hop struct{ from, to, verb, resource string }

func (p hop) matches(h trace.Hop) bool {
	from := p.from == "" || p.from == h.From || p.from == op && (h.From == trace.Watch || h.From == trace.Worker)
	return from && (p.to == "" || p.to == h.To) && (p.verb == "" || p.verb == h.Verb) &&
		(p.resource == "" || p.resource == h.Resource) && !h.IsNote()
}

func (p hop) String() string {
	return strings.TrimSpace(p.from + " → " + p.to + " " + p.verb + " " + p.resource)
}

// inOrder fails the test unless each pattern matches a hop that comes after
// the one the pattern before it matched.
func inOrder(t *testing.T, tl trace.Timeline, pats ...hop) {
	t.Helper()
	i := 0
	for _, p := range pats {
		for i < len(tl.Hops) && !p.matches(tl.Hops[i]) {
			i++
		}
		if i == len(tl.Hops) {
			t.Errorf("%s on %s: no hop %q after the hops before it in %v (the trace is in the log above)", tl.Object, tl.Stage.Dir, p, pats)
			return
		}
		i++
	}
}

// none fails the test for each hop the pattern matches.
func none(t *testing.T, tl trace.Timeline, p hop, why string) {
	t.Helper()
	for _, h := range tl.Hops {
		if p.matches(h) {
			t.Errorf("%s on %s: %s, yet the trace has %s → %s %s", tl.Object, tl.Stage.Dir, why, h.From, h.To, h.What())
		}
	}
}

// count is how many hops a pattern matches (folded runs count whole).
func count(tl trace.Timeline, p hop) int {
	n := 0
	for _, h := range tl.Hops {
		if p.matches(h) {
			n += h.Count
		}
	}
	return n
}

func logTimeline(t *testing.T, tl trace.Timeline) {
	t.Helper()
	var b strings.Builder
	tl.WriteText(&b)
	t.Log("\n" + b.String())
}

const (
	K, A, W, Q, R, GC = trace.Kubectl, trace.APIServer, trace.Watch, trace.Queue, trace.Worker, trace.GC
)

// The start and the end every stage's Logger trace shares: kubectl creates
// it, and deletes it.
var (
	applied = hop{K, A, "CREATE", "loggers"}
	deleted = hop{K, A, "DELETE", "loggers"}
	noGET   = hop{R, A, "GET", ""}
)

// shapes are each stage's assertions on its traces.
var shapes = map[string]func(*testing.T, traced){
	"1": func(t *testing.T, tr traced) {
		inOrder(t, tr.logger, applied, deleted)
		none(t, tr.logger, hop{from: op}, "stage 01 has no operator")
		none(t, tr.logger, hop{verb: "CREATE", resource: "deployments"}, "nobody acts on a Logger in stage 01")
		inOrder(t, tr.ticket, hop{K, A, "CREATE", "flighttickets"})
	},
	"2": func(t *testing.T, tr traced) {
		// Each event goes straight to the sync, which GETs the object first.
		inOrder(t, tr.logger, applied, hop{A, W, "ADDED", "loggers"}, hop{W, R, "ADDED", "loggers"},
			hop{R, A, "GET", "loggers"}, hop{R, A, "CREATE", "deployments"}, hop{R, A, "UPDATE", "loggers"},
			hop{A, W, "MODIFIED", "loggers"}, hop{W, R, "MODIFIED", "loggers"}, hop{R, A, "GET", "loggers"},
			deleted, hop{A, W, "DELETED", "loggers"}, hop{R, A, "DELETE", "deployments"})
		if gets, events := count(tr.logger, hop{R, A, "GET", "loggers"}), count(tr.logger, hop{W, R, "", ""}); gets < events-1 {
			t.Errorf("stage 02 GETs its Logger for each event it handles: %d GETs for %d events", gets, events)
		}
		inOrder(t, tr.ticket, hop{K, A, "CREATE", "flighttickets"}, hop{A, W, "ADDED", "flighttickets"},
			hop{R, A, "GET", "flighttickets"}, hop{R, A, "UPDATE", "flighttickets"})
	},
	"3": func(t *testing.T, tr traced) {
		inOrder(t, tr.logger, applied, hop{A, W, "ADDED", "loggers"}, hop{W, R, "ADDED", "loggers"},
			hop{R, A, "CREATE", "deployments"}, hop{R, A, "UPDATE", "loggers"},
			deleted, hop{A, W, "DELETED", "loggers"}, hop{R, A, "DELETE", "deployments"})
		none(t, tr.logger, noGET, "stage 03 reads from its cache")
		inOrder(t, tr.ticket, hop{K, A, "CREATE", "flighttickets"}, hop{A, W, "ADDED", "flighttickets"},
			hop{R, A, "UPDATE", "flighttickets"})
		none(t, tr.ticket, noGET, "stage 03 reads from its cache")
	},
	"4": func(t *testing.T, tr traced) {
		// The handler only puts the key in the queue; a worker does the rest.
		inOrder(t, tr.logger, applied, hop{A, W, "ADDED", "loggers"}, hop{W, Q, "ADDED", "loggers"},
			hop{R, A, "CREATE", "deployments"}, hop{R, A, "UPDATE", "loggers"},
			deleted, hop{A, W, "DELETED", "loggers"}, hop{R, A, "DELETE", "deployments"})
		none(t, tr.logger, noGET, "stage 04 reads from its cache")
		inOrder(t, tr.ticket, hop{K, A, "CREATE", "flighttickets"}, hop{A, W, "ADDED", "flighttickets"},
			hop{W, Q, "ADDED", "flighttickets"}, hop{R, A, "UPDATE", "flighttickets"})
		none(t, tr.ticket, noGET, "stage 04 reads from its cache")
	},
	"5": func(t *testing.T, tr traced) {
		inOrder(t, tr.logger, applied, hop{A, W, "ADDED", "loggers"}, hop{R, A, "CREATE", "deployments"},
			hop{R, A, "UPDATE", "loggers"}, deleted, hop{A, W, "DELETED", "loggers"}, hop{R, A, "DELETE", "deployments"})
		none(t, tr.logger, noGET, "stage 05 reads from the Manager's cache")
		none(t, tr.logger, hop{R, A, "", "loggers/status"}, "stage 05's Logger has no status subresource")
		inOrder(t, tr.ticket, hop{K, A, "CREATE", "flighttickets"}, hop{A, W, "ADDED", "flighttickets"},
			hop{R, A, "UPDATE", "flighttickets"})
		none(t, tr.ticket, noGET, "stage 05 reads from the Manager's cache")
	},
	"6": func(t *testing.T, tr traced) {
		// The Deployment is deleted by the garbage collector, after the
		// Logger is gone. The collector watches the Logger itself, so its
		// DELETE and the operator's DELETED event race: each only follows
		// kubectl's delete.
		// It reads from the Manager's cache, but asks the API server for the
		// Logger once before it makes its Deployment: one GET, no more.
		inOrder(t, tr.logger, applied, hop{A, W, "ADDED", "loggers"}, hop{R, A, "GET", "loggers"}, hop{R, A, "CREATE", "deployments"},
			hop{R, A, "PATCH", "loggers/status"}, deleted, hop{A, W, "DELETED", "loggers"})
		inOrder(t, tr.logger, deleted, hop{GC, A, "DELETE", "deployments"})
		if gets, all := count(tr.logger, hop{R, A, "GET", "loggers"}), count(tr.logger, noGET); gets != 1 || all != 1 {
			t.Errorf("stage 06 GETs a Logger once, before it makes its Deployment, and reads the rest from the Manager's cache; the trace has %d GETs of the Logger, %d in all", gets, all)
		}
		none(t, tr.logger, hop{R, A, "UPDATE", "loggers"}, "stage 06 writes a Logger's status through /status only")
		none(t, tr.logger, hop{R, A, "PATCH", "loggers"}, "stage 06 writes a Logger's status through /status only")
		none(t, tr.logger, hop{R, A, "DELETE", "deployments"}, "in stage 06 the garbage collector deletes the Deployment")
		// The finalizer first, then the seat hold (a create), then the
		// status, through /status: the only write to the ticket itself is
		// the finalizer's. (A hold create answered AlreadyExists is followed
		// by a GET of the hold, so only GETs of the ticket are ruled out.)
		inOrder(t, tr.ticket, hop{K, A, "CREATE", "flighttickets"}, hop{A, W, "ADDED", "flighttickets"},
			hop{R, A, "PATCH", "flighttickets"}, hop{R, A, "CREATE", "configmaps"}, hop{R, A, "PATCH", "flighttickets/status"})
		none(t, tr.ticket, hop{R, A, "GET", "flighttickets"}, "stage 06 reads tickets from the Manager's cache")
		// (A write refused with 409 Conflict, sent again, counts once.)
		writes := 0
		for _, h := range tr.ticket.Hops {
			if h.From == R && h.Resource == "flighttickets" && (h.Verb == "PATCH" || h.Verb == "UPDATE") && h.Code < 300 {
				writes += h.Count
			}
		}
		if writes != 1 {
			t.Errorf("stage 06 writes a ticket itself once (its finalizer) and its status through /status; the trace has %d writes to the ticket itself", writes)
		}
	},
}

// Module A1 runs stage 06's operator: its traces have 06's shape, and the
// API server notes the validating policy's audit annotation on kubectl's
// create of the Logger (no cap on the test's namespace).
func init() {
	shapes["A1"] = func(t *testing.T, tr traced) {
		shapes["6"](t, tr)
		want := "admission, logger-replicas/replicas: 1 (cap none)"
		for i, h := range tr.logger.Hops {
			if applied.matches(h) {
				if i+1 == len(tr.logger.Hops) || !tr.logger.Hops[i+1].IsNote() || tr.logger.Hops[i+1].Verb != want {
					t.Errorf("%s on %s: no note %q over the API server right after kubectl's create (the trace is in the log above)", tr.logger.Object, tr.logger.Stage.Dir, want)
				}
				return
			}
		}
		t.Errorf("%s on %s: no kubectl create", tr.logger.Object, tr.logger.Stage.Dir)
	}
	// Module A2 serves the rule as webhooks: after kubectl's create, the API
	// server calls the mutating webhook, then the validating one, and each
	// answers; then the operator's cache hears of the Logger. Its status
	// writes call neither (the rules leave loggers/status out).
	shapes["A2"] = func(t *testing.T, tr traced) {
		shapes["6"](t, tr)
		W := trace.Webhook
		inOrder(t, tr.logger, applied,
			hop{A, W, "AdmissionReview CREATE loggers/traced (mutate)", ""}, hop{W, A, "allowed", ""},
			hop{A, W, "AdmissionReview CREATE loggers/traced (validate)", ""}, hop{W, A, "allowed", ""},
			hop{A, trace.Watch, "ADDED", "loggers"})
		for _, h := range tr.logger.Hops {
			if h.From == A && h.To == W && strings.HasPrefix(h.Verb, "AdmissionReview ") && !strings.Contains(h.Verb, "CREATE") && !strings.Contains(h.Verb, "UPDATE") {
				t.Errorf("%s on %s: the webhook was called for %q; only creates and updates of the Logger go to it", tr.logger.Object, tr.logger.Stage.Dir, h.Verb)
			}
		}
	}
	// Module A3 is A2 with the Logger served as v1 and v2, stored as v2,
	// and converted by the operator. kubectl creates the traced Logger as
	// v1: it is converted to v2 before it is stored, so before the cache
	// hears of it. After it has converged, kubectl reads it as v1: the API
	// server reads it from etcd, as v2, and calls the webhook to convert
	// it. The operator works in v2. (Other conversions come and go around
	// these: the admission webhooks are called in v2; the API server's v1
	// watch cache converts every change; a write in v2 converts the object
	// to v1 for the managed fields kubectl wrote in v1. They are in the
	// trace, not asserted.)
	//
	// Here the garbage collector deletes the Deployment late (about 40 s
	// after kubectl's delete in these runs): the CRD gained v2 just before
	// the test, and the collector cannot map the owner reference
	// (example.com/v2) until its next discovery sync, every 30 s; until
	// then it retries with backoff.
	shapes["A3"] = func(t *testing.T, tr traced) {
		shapes["A2"](t, tr)
		W := trace.Webhook
		toV2 := hop{A, W, "ConversionReview loggers/traced example.com/v1 → example.com/v2", ""}
		toV1 := hop{A, W, "ConversionReview loggers/traced example.com/v2 → example.com/v1", ""}
		converted := hop{W, A, "converted", ""}
		readV1 := hop{K, A, "GET", "loggers"}
		inOrder(t, tr.logger, applied, toV2, converted, hop{A, trace.Watch, "ADDED", "loggers"})
		inOrder(t, tr.logger, applied, readV1, toV1, converted, deleted)
		created := false
		for _, h := range tr.logger.Hops {
			created = created || applied.matches(h)
			switch {
			case applied.matches(h) && h.Version != "v1":
				t.Errorf("%s on %s: kubectl created the Logger in %q; the trace applies it as v1", tr.logger.Object, tr.logger.Stage.Dir, h.Version)
			case created && readV1.matches(h) && h.Version != "v1":
				t.Errorf("%s on %s: kubectl's read after the create was in %q; the trace reads it as v1", tr.logger.Object, tr.logger.Stage.Dir, h.Version)
			case (h.From == R || h.From == trace.Watch) && h.To == A && strings.HasPrefix(h.Resource, "loggers") && h.Version != "v2":
				t.Errorf("%s on %s: the operator sent %s in %q; it works in v2, the version Loggers are stored in", tr.logger.Object, tr.logger.Stage.Dir, h.What(), h.Version)
			}
		}
		for _, h := range tr.logger.Hops {
			if h.From == W && h.Verb != "converted" && h.Verb != "allowed" {
				t.Errorf("%s on %s: the webhook answered %q", tr.logger.Object, tr.logger.Stage.Dir, h.Verb)
			}
		}
	}
}

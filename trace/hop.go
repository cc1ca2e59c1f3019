// Package trace follows one object through a stage of the course: every
// request and watch event of its life, from `kubectl apply` to the converged
// state (and on request its deletion), merged from three sources and shown as
// a timeline and a Mermaid sequence diagram. `make trace-N` runs it.
//
//   - The API server's audit log (cluster/audit-policy.yaml): every client's
//     requests, kubectl's, the controller manager's, the scheduler's, kwok's.
//   - The operator's own recording (apicount, with APICOUNT_RECORD set): each
//     request it sent, with the answer's code and resourceVersion, and each
//     watch event it received.
//   - The operator's log: what only it knows (an event handed to the sync or
//     the queue, a Deployment created, "in sync").
package trace

import (
	"fmt"
	"strings"
	"time"
)

// The participants of a trace. A stage names its own (Participants).
const (
	Kubectl   = "kubectl"
	APIServer = "apiserver"
	Etcd      = "etcd"
	Watch     = "watch"   // the operator's watch, informer or cache
	Queue     = "queue"   // its workqueue (04 to 06)
	Worker    = "worker"  // its sync, handlers, workers or Reconcile
	Webhook   = "webhook" // an admission or conversion webhook it serves (modules A2, A3)
	KCM       = "kcm"
	GC        = "gc"
	Scheduler = "scheduler"
	Kwok      = "kwok"
)

// Hop is one line of a trace: a request (From a client To the API server), a
// watch event (From the API server To the operator's watch), a step inside
// the operator (From one of its parts To another), or a note (From == To).
type Hop struct {
	Time     time.Time
	From, To string
	// Verb is a request's (GET, LIST, WATCH, CREATE, UPDATE, PATCH, DELETE),
	// an event's type (ADDED, MODIFIED, DELETED), or for a step or a note the
	// operator's words.
	Verb     string
	Resource string // "loggers", "loggers/status"; "" for a step or note
	Name     string
	// Version is the API version a request to the traced object was sent
	// in ("v1"), where the object's kind has two (Stage.Converts); else "".
	Version string
	Code    int    // the answer's HTTP code; 0 when not known
	RV      string // resourceVersion, where the source knows it
	// Stored: a write the API server answered with success, so it stored the
	// change in etcd first (inferred: etcd is not watched).
	Stored bool
	// Unchanged: a write the API server answered with the resourceVersion
	// the object already had, so it stored nothing (a patch that changed
	// nothing).
	Unchanged bool
	// Via says who inside kube-controller-manager sent it (the Deployment
	// or ReplicaSet controller), from the audit log's user agent.
	Via string
	// Count is how many hops this line stands for (folded runs), Names how
	// many different objects they touched.
	Count, Names int
	LastRV       string // the last resourceVersion of a folded run
}

// IsNote reports whether the hop is a note over one participant.
func (h Hop) IsNote() bool { return h.From == h.To }

// What is the hop's text without its time and participants:
// "CREATE loggers/audit 201", "ADDED loggers/audit rv 812".
func (h Hop) What() string {
	var b strings.Builder
	b.WriteString(h.Verb)
	if h.Resource != "" {
		b.WriteString(" " + h.Resource)
		switch {
		case h.Names > 1:
			fmt.Fprintf(&b, " (%d objects)", h.Names)
		case strings.HasPrefix(h.Resource, "events") && h.Name != "":
			// An Event's name is its object's, a dot, and a number.
			b.WriteString(" about " + strings.SplitN(h.Name, ".", 2)[0])
		case h.Name != "":
			b.WriteString(" " + h.Name)
		}
	}
	if h.Version != "" {
		b.WriteString(" (" + h.Version + ")")
	}
	if h.Via != "" {
		b.WriteString(" [" + h.Via + "]")
	}
	if h.Code != 0 {
		fmt.Fprintf(&b, " → %d", h.Code)
	}
	switch {
	case h.RV != "" && h.LastRV != "" && h.LastRV != h.RV:
		fmt.Fprintf(&b, " rv %s…%s", h.RV, h.LastRV)
	case h.RV != "":
		b.WriteString(" rv " + h.RV)
	}
	if h.Unchanged {
		b.WriteString(" (unchanged: nothing stored)")
	}
	if h.Count > 1 {
		fmt.Fprintf(&b, " ×%d", h.Count)
	}
	return b.String()
}

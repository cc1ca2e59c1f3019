// Package apicount counts the requests an operator sends to the API server.
//
// Every stage wraps its rest.Config with a Counter and prints the counts when
// it exits, so a learner can see what each stage costs: stage 02 GETs every
// object it hears about, stage 03 reads from its cache and GETs nothing.
//
//	counter := apicount.New()
//	counter.Wrap(cfg)                     // before building any client
//	defer counter.WriteSummary(os.Stderr) // on the way out
//
// A Counter also prints the summary whenever the process receives SIGUSR1,
// without stopping it (`kill -USR1 <pid>`): that is how `make bench` reads the
// counts of a running operator between the phases of its workload.
//
// The summary looks like this, and the e2e tests parse it (ParseSummary):
//
//	API requests made by this operator:
//	  LIST    flighttickets          1
//	  WATCH   flighttickets          1
//	  UPDATE  flighttickets          2
//	api-requests total=4 reads=2 writes=2
package apicount

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"

	"k8s.io/client-go/rest"
)

// Key is what one request did: a verb such as GET, LIST, WATCH, CREATE,
// UPDATE, PATCH or DELETE, on a resource such as "flighttickets" or
// "flighttickets/status".
type Key struct {
	Verb     string
	Resource string
}

// IsWrite reports whether the verb changes something.
func (k Key) IsWrite() bool {
	switch k.Verb {
	case "CREATE", "UPDATE", "PATCH", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}

// Counter counts requests. It is safe for concurrent use.
type Counter struct {
	mu     sync.Mutex
	counts map[Key]int
}

// New returns an empty Counter that prints its summary to stderr on SIGUSR1.
func New() *Counter {
	c := &Counter{counts: map[Key]int{}}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		for range usr1 {
			c.WriteSummary(os.Stderr)
		}
	}()
	return c
}

// Wrap makes every client built from cfg count its requests here, and, when
// the environment variable APICOUNT_RECORD names a file, record each request
// and watch event there too (record.go).
func (c *Counter) Wrap(cfg *rest.Config) {
	rec := openRecorder()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		if rec != nil {
			rt = recordingRoundTripper{next: rt, rec: rec}
		}
		return roundTripper{next: rt, c: c}
	})
}

type roundTripper struct {
	next http.RoundTripper
	c    *Counter
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	r.c.Add(Classify(req.Method, req.URL.Path, req.URL.Query().Get("watch")))
	return r.next.RoundTrip(req)
}

// Add counts one request.
func (c *Counter) Add(k Key) {
	c.mu.Lock()
	c.counts[k]++
	c.mu.Unlock()
}

// Snapshot returns a copy of the counts so far.
func (c *Counter) Snapshot() map[Key]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[Key]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// Classify turns an HTTP request into a Key, with the verbs RBAC and the
// audit log use, in upper case: a GET of a collection is a LIST, a GET with
// watch=true (or on a /watch/ path) is a WATCH, a POST a CREATE, a PUT an
// UPDATE. (apiserver_request_total keeps POST and PUT, and calls an apply
// patch APPLY.)
func Classify(method, path, watch string) Key {
	parts, watchPath, ok := apiPath(path)
	if !ok {
		return Key{Verb: method, Resource: "/" + strings.Trim(path, "/")}
	}
	isWatch := watchPath || watch == "true" || watch == "1"
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) != 2 {
		parts = parts[2:] // namespaces/<ns>/<resource>/...
	} else if len(parts) == 2 && parts[0] == "namespaces" {
		parts = []string{"namespaces", parts[1]}
	}
	if len(parts) == 0 {
		return Key{Verb: method, Resource: "(discovery)"}
	}
	resource, named := parts[0], len(parts) >= 2
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	verb := method
	switch method {
	case http.MethodGet:
		switch {
		case isWatch:
			verb = "WATCH"
		case named:
			verb = "GET"
		default:
			verb = "LIST"
		}
	case http.MethodPost:
		verb = "CREATE"
	case http.MethodPut:
		verb = "UPDATE"
	case http.MethodDelete:
		if !named {
			verb = "DELETECOLLECTION"
		}
	}
	return Key{Verb: verb, Resource: resource}
}

// apiPath splits a resource path, /api/v1/... or /apis/<group>/<version>/...,
// into what follows the group version, without the old /watch/ prefix
// (watch reports it). ok is false for any other path (discovery, /healthz).
func apiPath(path string) (parts []string, watch, ok bool) {
	parts = strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return nil, false, false
	}
	if len(parts) > 0 && parts[0] == "watch" {
		return parts[1:], true, true
	}
	return parts, false, true
}

// Totals adds up a snapshot.
func Totals(counts map[Key]int) (total, reads, writes int) {
	for k, n := range counts {
		total += n
		if k.IsWrite() {
			writes += n
		} else {
			reads += n
		}
	}
	return total, reads, writes
}

// WriteSummary prints the counts as a small table, most frequent first, and a
// last line with the totals.
func (c *Counter) WriteSummary(w io.Writer) {
	counts := c.Snapshot()
	keys := make([]Key, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		if keys[i].Resource != keys[j].Resource {
			return keys[i].Resource < keys[j].Resource
		}
		return keys[i].Verb < keys[j].Verb
	})
	var b strings.Builder
	b.WriteString("API requests made by this operator:\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-7s %-28s %6d\n", k.Verb, k.Resource, counts[k])
	}
	total, reads, writes := Totals(counts)
	fmt.Fprintf(&b, "api-requests total=%d reads=%d writes=%d\n", total, reads, writes)
	// The summary goes to the operator's output as it exits: there is
	// nowhere left to report a failed write.
	_, _ = io.WriteString(w, b.String())
}

// ParseSummary reads the counts back from output that contains a summary
// written by WriteSummary (the last one, if there are several).
func ParseSummary(output string) (map[Key]int, bool) {
	i := strings.LastIndex(output, "API requests made by this operator:\n")
	if i < 0 {
		return nil, false
	}
	counts := map[Key]int{}
	for _, line := range strings.Split(output[i:], "\n")[1:] {
		if strings.HasPrefix(line, "api-requests ") {
			return counts, true
		}
		f := strings.Fields(line)
		if len(f) != 3 || !strings.HasPrefix(line, "  ") {
			continue
		}
		var n int
		if _, err := fmt.Sscan(f[2], &n); err == nil {
			counts[Key{Verb: f[0], Resource: f[1]}] = n
		}
	}
	return counts, false
}

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/operator-flow/operator-flow/apicount"
	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/trace"
)

// A lab's hand-drawn sequence diagrams are checked against the traces of its
// stage. Every arrow to kube-apiserver names its request as
// "VERB resource/name[/subresource]" (HTTP verbs: POST, PUT, PATCH, GET,
// DELETE, or LIST and WATCH), then, where the Logger has two versions, may
// name the version as the trace does: "GET loggers/audit (v1)". So that:
//
//   - each request drawn is in the traces, sent by the same kind of client
//     (kubectl, the operator, the garbage collector), in the order drawn,
//     in the version drawn if one is;
//     LIST and WATCH, which an operator sends when it starts, before any
//     trace, are looked for in its recording from its start; an Event, which
//     the recorder sends in the background, only needs to be there;
//   - where a diagram draws the operator's requests about an object, each
//     write the operator makes to it, up to kubectl's DELETE, is drawn.
//
// Resources the audit policy does not log (the CRDs themselves, namespaces)
// cannot be checked, and are skipped.

// diagramArrow is one request a diagram draws.
type diagramArrow struct {
	line, from, verb string
	resources        []string // "loggers", "loggers/status"
	version          string   // of the first resource: "v1", or "" when the arrow names none
}

// drawnHop is a request a diagram draws, as a pattern for the trace's hops.
type drawnHop struct {
	hop
	version string
}

func (d drawnHop) matches(h trace.Hop) bool {
	return d.hop.matches(h) && (d.version == "" || d.version == h.Version)
}

func (d drawnHop) String() string {
	if d.version == "" {
		return d.hop.String()
	}
	return d.hop.String() + " (" + d.version + ")"
}

var (
	participantLine = regexp.MustCompile(`^\s*(?:participant|actor)\s+(\w+)(?:\s+as\s+(.*))?$`)
	arrowLine       = regexp.MustCompile(`^\s*(\w+)\s*(?:->>|-->>|->|-->|-x|--x|-\)|--\))\s*(\w+)\s*:\s*(.*)$`)
	requestText     = regexp.MustCompile(`^(POST|PUT|PATCH|GET|DELETE|LIST|WATCH)\s+(.*)$`)
	drawnVersion    = regexp.MustCompile(`^\S+\s+\((v\d+\w*)\)`)
	mermaidBlock    = regexp.MustCompile("(?s)```mermaid\n(.*?)```")
)

// traced resources are those the audit policy logs; notLogged those it
// leaves out on purpose.
var (
	tracedResources = map[string]bool{"flighttickets": true, "loggers": true, "deployments": true,
		"replicasets": true, "pods": true, "events": true, "configmaps": true}
	notLogged = map[string]bool{"customresourcedefinitions": true, "namespaces": true}
)

var verbs = map[string]string{"POST": "CREATE", "PUT": "UPDATE"}

// labArrows reads the requests drawn in lab id's diagrams (lab 2:
// labs/02-*.md, lab A1: labs/A1-*.md).
func labArrows(id string) (string, []diagramArrow, error) {
	prefix := id
	if len(id) == 1 {
		prefix = "0" + id
	}
	files, _ := filepath.Glob(harness.RepoPath("labs", prefix+"-*.md"))
	if len(files) != 1 {
		return "", nil, fmt.Errorf("want one labs/%s-*.md, found %v", prefix, files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		return "", nil, err
	}
	name := filepath.Base(files[0])
	var out []diagramArrow
	for _, block := range mermaidBlock.FindAllStringSubmatch(string(b), -1) {
		names := map[string]string{}
		for _, line := range strings.Split(block[1], "\n") {
			if m := participantLine.FindStringSubmatch(line); m != nil {
				names[m[1]] = m[1] + " " + m[2]
				continue
			}
			m := arrowLine.FindStringSubmatch(line)
			if m == nil || !strings.Contains(names[m[2]], "kube-apiserver") || strings.Contains(names[m[1]], "kube-apiserver") {
				continue
			}
			from := op
			switch sender := names[m[1]]; {
			case strings.HasPrefix(sender, "You"):
				continue
			case strings.Contains(sender, "webhook"):
				continue // an answer to the API server's call, not a request: the shape test checks it
			case strings.Contains(sender, "etcd"):
				continue // what the API server read or stored: the trace infers etcd, and sees none of it
			case strings.Contains(sender, "kubectl"):
				from = trace.Kubectl
			case strings.Contains(sender, "garbage collector"):
				from = trace.GC
			case strings.Contains(sender, "controller-manager"):
				from = trace.KCM
			}
			req := requestText.FindStringSubmatch(strings.TrimSpace(m[3]))
			if req == nil {
				return name, nil, fmt.Errorf("%s: %q: an arrow to kube-apiserver starts with its request (VERB resource/name), so that it can be checked against the trace", name, strings.TrimSpace(line))
			}
			a := diagramArrow{line: strings.TrimSpace(line), from: from, verb: req[1]}
			if v := drawnVersion.FindStringSubmatch(req[2]); v != nil {
				a.version = v[1]
			}
			if v, ok := verbs[a.verb]; ok {
				a.verb = v
			}
			for i, chunk := range regexp.MustCompile(`,\s*|\s+and\s+`).Split(req[2], -1) {
				word := strings.Fields(chunk + " ")
				if len(word) == 0 {
					continue
				}
				parts := strings.Split(strings.TrimRight(word[0], ":;."), "/")
				res := parts[0]
				if !tracedResources[res] && !notLogged[res] {
					if i == 0 {
						return name, nil, fmt.Errorf("%s: %q: %q is not a resource; name the request as VERB resource/name", name, a.line, res)
					}
					break // the rest is prose
				}
				if len(parts) == 3 {
					res += "/" + parts[2]
				}
				a.resources = append(a.resources, res)
			}
			out = append(out, a)
		}
	}
	return name, out, nil
}

// checkLabDiagram checks lab id's diagrams against its stage's traces.
func checkLabDiagram(t *testing.T, id string, tr traced) {
	t.Helper()
	name, arrows, err := labArrows(id)
	if err != nil {
		t.Error(err)
		return
	}
	timelineOf := func(res string) *trace.Timeline {
		if strings.HasPrefix(res, "flighttickets") || res == "configmaps" {
			return &tr.ticket
		}
		return &tr.logger
	}
	ordered := map[*trace.Timeline][]drawnHop{}
	drawn := map[string]bool{}
	for _, a := range arrows {
		for i, res := range a.resources {
			p := hop{a.from, trace.APIServer, a.verb, res}
			drawn[a.verb+" "+res] = true
			switch {
			case notLogged[strings.SplitN(res, "/", 2)[0]]:
			case a.verb == "LIST" || a.verb == "WATCH":
				if !recorded(tr, a.verb, res) {
					t.Errorf("%s draws %q, yet stage %s's operator sent no %s %s since it started", name, a.line, id, a.verb, res)
				}
			case res == "events":
				if count(tr.logger, p)+count(tr.ticket, p) == 0 {
					t.Errorf("%s draws %q, yet no trace of stage %s has %s", name, a.line, id, p)
				}
			default:
				tl := timelineOf(res)
				d := drawnHop{hop: p}
				if i == 0 {
					d.version = a.version
				}
				if seq := ordered[tl]; len(seq) == 0 || seq[len(seq)-1] != d {
					ordered[tl] = append(seq, d)
				}
			}
		}
	}
	for tl, seq := range ordered {
		if !inOrderQuiet(*tl, seq) {
			t.Errorf("%s draws these requests in this order: %v; the trace of %s on stage %s has not got them in that order (it is in the log above)", name, seq, tl.Object, id)
		}
		// Where the diagram draws the operator at work on the object,
		// every write the operator makes to it, until kubectl deletes it,
		// is drawn. (A diagram of kubectl reading the object draws none.)
		operator := false
		for _, d := range seq {
			operator = operator || d.from == op
		}
		for _, h := range tl.Hops {
			if !operator || h.From == trace.Kubectl && h.Verb == "DELETE" {
				break
			}
			if h.From == trace.Worker && (apicount.Key{Verb: h.Verb}).IsWrite() && h.Resource != "events" && !drawn[h.Verb+" "+h.Resource] {
				t.Errorf("%s does not draw the operator's %s %s, which the trace of %s on stage %s has (an arrow \"R->>A: %s %s/...\")", name, h.Verb, h.Resource, tl.Object, id, httpVerb(h.Verb), h.Resource)
				drawn[h.Verb+" "+h.Resource] = true
			}
		}
	}
}

func recorded(tr traced, verb, res string) bool {
	for _, r := range tr.recording {
		if r.Kind == "request" && r.Verb == verb && r.Resource == res {
			return true
		}
	}
	return false
}

func inOrderQuiet(tl trace.Timeline, pats []drawnHop) bool {
	i := 0
	for _, p := range pats {
		for i < len(tl.Hops) && !p.matches(tl.Hops[i]) {
			i++
		}
		if i == len(tl.Hops) {
			return false
		}
		i++
	}
	return true
}

func httpVerb(v string) string {
	for http, ours := range verbs {
		if ours == v {
			return http
		}
	}
	return v
}

// TestLabDiagramsParse: every lab's diagrams name their requests so that
// they can be checked (no cluster needed).
func TestLabDiagramsParse(t *testing.T) {
	for _, stage := range trace.Stages {
		name, arrows, err := labArrows(stage.ID)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, a := range arrows {
			t.Logf("%s: %s %s %v %s", name, a.from, a.verb, a.resources, a.version)
		}
	}
}

package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"sort"
	"strings"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/operator-flow/operator-flow/apicount"
)

// ToolUserAgent is the user agent of the trace's own requests (its waits),
// which it leaves out of the trace.
const ToolUserAgent = "make-trace"

// operatorAgent is how every stage's operator names itself ("operator-flow/02-raw-watch").
const operatorAgent = "operator-flow/"

// ParseAudit reads audit events, one JSON object a line, as the API server's
// log backend writes them. A line that is not one (a partly written last
// line) is skipped.
func ParseAudit(b []byte) []auditv1.Event {
	var out []auditv1.Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditv1.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.ObjectRef != nil {
			out = append(out, e)
		}
	}
	return out
}

// AuditHops turns the audit events of the object's life into hops. With
// recorded true, the operator's own requests are left out: its recording
// has them, with their resourceVersions.
func AuditHops(events []auditv1.Event, o Object, recorded bool) []Hop {
	var out []Hop
	for _, e := range events {
		if strings.HasPrefix(e.UserAgent, ToolUserAgent) {
			continue
		}
		isOperator := strings.HasPrefix(e.UserAgent, operatorAgent)
		if isOperator && recorded {
			continue
		}
		verb := strings.ToUpper(e.Verb)
		// A watch is logged when it starts and again when it ends: the start
		// is the hop. Everything else when its answer is complete.
		if verb == "WATCH" && e.Stage != auditv1.StageResponseStarted ||
			verb != "WATCH" && e.Stage != auditv1.StageResponseComplete {
			continue
		}
		ref := e.ObjectRef
		resource := ref.Resource
		if ref.Subresource != "" {
			resource += "/" + ref.Subresource
		}
		from, via := participant(e, verb)
		switch {
		case o.Related(resource, ref.Namespace, ref.Name):
		case ref.Name == "" && verb == "CREATE" && ref.Resource == "pods" && from == KCM && ref.Namespace == o.Namespace && o.IsLogger():
			// The ReplicaSet controller creates pods from a generateName:
			// at the Metadata level the log has no name for them yet.
		case ref.Name == "" && isOperator && (verb == "LIST" || verb == "WATCH") && o.Watched(resource):
		default:
			continue
		}
		h := Hop{Time: e.RequestReceivedTimestamp.Time, From: from, To: APIServer, Verb: verb,
			Resource: resource, Name: ref.Name, Version: versionOf(e, o), Via: via}
		if e.ResponseStatus != nil {
			h.Code = int(e.ResponseStatus.Code)
		}
		h.Stored = apicount.Key{Verb: verb}.IsWrite() && h.Code >= 200 && h.Code < 300
		out = append(out, h)
		if ref.Resource == o.Resource && ref.Subresource == "" {
			if note := admissionNote(e.Annotations); note != "" {
				out = append(out, Hop{Time: h.Time, From: APIServer, To: APIServer, Verb: note})
			}
		}
	}
	return out
}

// versionOf is the API version of a request to the object's own kind
// ("v1"), else "".
func versionOf(e auditv1.Event, o Object) string {
	if e.ObjectRef.Resource != o.Resource {
		return ""
	}
	return e.ObjectRef.APIVersion
}

// AuditVersions maps the audit ID of each request to the object's kind to
// the API version it was sent in, for the operator's recorded requests,
// which carry the ID but not the version.
func AuditVersions(events []auditv1.Event, o Object) map[string]string {
	out := map[string]string{}
	for _, e := range events {
		if v := versionOf(e, o); v != "" {
			out[string(e.AuditID)] = v
		}
	}
	return out
}

// notAdmission are the annotations other steps of a Logger write carry
// here: who it is, whether it may, how long it took.
var notAdmission = []string{"authentication.k8s.io/", "authorization.k8s.io/", "apiserver.latency.k8s.io/"}

// admissionNote turns what admission wrote into a request's audit event
// into a note over the API server: a ValidatingAdmissionPolicy's
// auditAnnotations ("<policy>/<key>") and failed validations under Audit
// (validation.policy.admission.k8s.io/validation_failure), a mutating
// webhook's mutation.webhook.admission.k8s.io/round_<r>_index_<i> (whether
// it changed the object), any webhook's own "<webhook>/<key>".
// A MutatingAdmissionPolicy writes none. "" when there is nothing.
func admissionNote(annotations map[string]string) string {
	var parts []string
	for k, v := range annotations {
		skip := false
		for _, p := range notAdmission {
			skip = skip || strings.HasPrefix(k, p)
		}
		if !skip {
			parts = append(parts, k+": "+v)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	sort.Strings(parts)
	return "admission, " + strings.Join(parts, "; ")
}

// participant names the client of an audit event, and for the controller
// manager which of its controllers sent it. Its controllers share one
// credential here unless --use-service-account-credentials is set; either way
// the user agent ends in the controller's name.
func participant(e auditv1.Event, verb string) (from, via string) {
	ua, user := e.UserAgent, e.User.Username
	controller := ua[strings.LastIndex(ua, "/")+1:]
	switch {
	case strings.HasPrefix(ua, "kubectl"):
		return Kubectl, ""
	case strings.HasPrefix(ua, operatorAgent):
		if verb == "LIST" || verb == "WATCH" {
			return Watch, ""
		}
		return Worker, ""
	case controller == "generic-garbage-collector" || strings.HasSuffix(user, ":generic-garbage-collector"):
		return GC, ""
	case strings.HasPrefix(ua, "kube-controller-manager") || user == "system:kube-controller-manager":
		return KCM, strings.TrimSuffix(controller, "-controller")
	case strings.HasPrefix(user, "system:serviceaccount:kube-system:"):
		return KCM, strings.TrimSuffix(strings.TrimPrefix(user, "system:serviceaccount:kube-system:"), "-controller")
	case strings.HasPrefix(ua, "kube-scheduler") || user == "system:kube-scheduler":
		return Scheduler, ""
	case strings.HasPrefix(ua, "kwok"):
		return Kwok, ""
	}
	return user, ""
}

// inWindow keeps the hops from start to end.
func inWindow(hops []Hop, start, end time.Time) []Hop {
	var out []Hop
	for _, h := range hops {
		if !h.Time.Before(start) && !h.Time.After(end) {
			out = append(out, h)
		}
	}
	return out
}

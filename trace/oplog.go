package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"time"
)

// The operator's log says what no request shows. Stages 02 to 04 print with
// Go's log package (time of day with microseconds, then the message);
// stages 05 and 06 with controller-runtime's zap logger (tab-separated: time,
// level, logger name, message, JSON fields), whose timestamps have
// nanoseconds with --zap-time-encoding=rfc3339nano, which `make trace-N`
// passes.

// stdlogLine is a line of stages 02 to 04: "23:08:36.123456 message".
var stdlogLine = regexp.MustCompile(`^(\d\d:\d\d:\d\d\.\d{6}) (.*)$`)

// eventLine is their line for an event handed over: "event ADDED    loggers lab/audit resourceVersion=812".
var eventLine = regexp.MustCompile(`^event (\w+)\s+(\S+) (\S+)/(\S+) resourceVersion=(\S*)`)

// zapFieldsShown are the JSON fields of a zap line worth showing; the rest
// (controller, reconcileID, the object's name again) say nothing new.
var zapFieldsShown = []string{"deployment", "state", "message", "error"}

// LogHops turns the operator's log lines about the object into hops. Stages
// 02 to 04 print each event they hand over: from the watch to the sync (02),
// to the event handlers (03), to the queue (04, whose handler adds the key);
// everything else is a note over the worker. day is the date of the trace,
// which the lines of stages 02 to 04 leave out; handoff is where an event
// goes (Worker or Queue).
func LogHops(b []byte, o Object, day time.Time, handoff string) []Hop {
	var out []Hop
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	key := o.Namespace + "/" + o.Name
	for sc.Scan() {
		line := sc.Text()
		if m := stdlogLine.FindStringSubmatch(line); m != nil {
			t, err := time.ParseInLocation("15:04:05.000000", m[1], time.Local)
			if err != nil {
				continue
			}
			y, mo, d := day.In(time.Local).Date()
			t = time.Date(y, mo, d, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.Local)
			msg := m[2]
			if e := eventLine.FindStringSubmatch(msg); e != nil {
				if !o.Related(e[2], e[3], e[4]) {
					continue
				}
				out = append(out, Hop{Time: t, From: Watch, To: handoff, Verb: e[1], Resource: e[2], Name: e[4], RV: e[5]})
				continue
			}
			if strings.Contains(msg, key) || o.IsLogger() && strings.Contains(msg, o.Namespace+"/"+o.Deployment()) {
				out = append(out, Hop{Time: t, From: Worker, To: Worker, Verb: msg})
			}
			continue
		}
		if hops := webhookHops(line, o); hops != nil {
			out = append(out, hops...)
			continue
		}
		if hops := conversionHops(line, o); hops != nil {
			out = append(out, hops...)
			continue
		}
		if h, ok := zapHop(line, o); ok {
			out = append(out, h)
		}
	}
	return out
}

// webhookHops reads a line a webhook served by the operator logs for each
// admission request about the object (module A2: "admission allowed" or
// "admission refused", with the fields webhook, operation and reason), as
// the request the API server sent and the webhook's answer. The line is
// logged as the answer goes, so both hops carry its time.
func webhookHops(line string, o Object) []Hop {
	parts := strings.Split(line, "\t")
	if len(parts) < 4 || !strings.HasPrefix(parts[len(parts)-2], "admission ") {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return nil
	}
	var f struct {
		Namespace, Name, Webhook, Operation, Reason string
		Allowed                                     bool
	}
	if json.Unmarshal([]byte(parts[len(parts)-1]), &f) != nil || f.Webhook == "" || f.Namespace != o.Namespace || f.Name != o.Name {
		return nil
	}
	answer := "allowed"
	if !f.Allowed {
		answer = "refused: " + f.Reason
	}
	return []Hop{
		{Time: t, From: APIServer, To: Webhook, Verb: "AdmissionReview " + f.Operation + " " + o.Resource + "/" + o.Name + " (" + f.Webhook + ")"},
		{Time: t.Add(time.Nanosecond), From: Webhook, To: APIServer, Verb: answer},
	}
}

// conversionHops reads a line the conversion webhook served by the operator
// logs for each object of a ConversionReview (module A3: "conversion", with
// the fields from, to, converted and, when it failed, reason), when the
// object is the traced one, as the API server's call and the webhook's
// answer. As with webhookHops, both carry the line's time: the answer's.
func conversionHops(line string, o Object) []Hop {
	parts := strings.Split(line, "\t")
	if len(parts) < 4 || parts[len(parts)-2] != "conversion" {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return nil
	}
	var f struct {
		Namespace, Name, From, To, Reason string
		Converted                         bool
	}
	if json.Unmarshal([]byte(parts[len(parts)-1]), &f) != nil || f.From == "" || f.Namespace != o.Namespace || f.Name != o.Name {
		return nil
	}
	// A failed conversion fails the request that needed it; the API
	// server's error says the webhook failed, and so does the trace.
	answer := "converted"
	if !f.Converted {
		answer = "failed: " + f.Reason
	}
	return []Hop{
		{Time: t, From: APIServer, To: Webhook, Verb: "ConversionReview " + o.Resource + "/" + o.Name + " " + f.From + " → " + f.To},
		{Time: t.Add(time.Nanosecond), From: Webhook, To: APIServer, Verb: answer},
	}
}

// zapHop reads one line of stages 05 and 06 about the object.
func zapHop(line string, o Object) (Hop, bool) {
	parts := strings.Split(line, "\t")
	if len(parts) < 4 || !strings.HasPrefix(parts[len(parts)-1], "{") {
		return Hop{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return Hop{}, false
	}
	var fields map[string]any
	if json.Unmarshal([]byte(parts[len(parts)-1]), &fields) != nil {
		return Hop{}, false
	}
	msg := parts[len(parts)-2]
	// A reconcile's lines name the object it reconciles. (The recorder's
	// "Event occurred" lines are left out: the Event's POST is in the trace.)
	if fields["namespace"] != o.Namespace || fields["name"] != o.Name || fields["reconcileID"] == nil {
		return Hop{}, false
	}
	for _, k := range zapFieldsShown {
		if s, ok := fields[k].(string); ok {
			msg += " " + k + "=" + s
		}
	}
	return Hop{Time: t, From: Worker, To: Worker, Verb: msg}, true
}

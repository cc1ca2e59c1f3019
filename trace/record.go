package trace

import (
	"bufio"
	"bytes"
	"encoding/json"

	"github.com/operator-flow/operator-flow/apicount"
)

// ParseRecord reads what apicount recorded (APICOUNT_RECORD): one
// apicount.Hop a line. A partly written last line is skipped.
func ParseRecord(b []byte) []apicount.Hop {
	var out []apicount.Hop
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var h apicount.Hop
		if json.Unmarshal(sc.Bytes(), &h) == nil {
			out = append(out, h)
		}
	}
	return out
}

// RecordHops turns the operator's recording into hops: its requests (a LIST
// or WATCH from its watch or cache, the rest from its worker), and the watch
// events it received, for the object's life. versions (AuditVersions) gives
// a request its API version by its audit ID; it may be nil.
func RecordHops(rec []apicount.Hop, o Object, versions map[string]string) []Hop {
	var out []Hop
	for _, r := range rec {
		related := o.Related(r.Resource, r.Namespace, r.Name)
		switch r.Kind {
		case "request":
			listing := r.Verb == "LIST" || r.Verb == "WATCH"
			if !related && (!listing || r.Name != "" || !o.Watched(r.Resource)) {
				continue
			}
			from := Worker
			if listing {
				from = Watch
			}
			verb := r.Verb
			if r.Error != "" {
				verb += " (failed: " + r.Error + ")"
			}
			out = append(out, Hop{Time: r.Time, From: from, To: APIServer, Verb: verb, Resource: r.Resource,
				Name: r.Name, Version: versions[r.AuditID], Code: r.Code, RV: r.ResourceVersion, Stored: apicount.Key{Verb: r.Verb}.IsWrite() && r.Code >= 200 && r.Code < 300})
		case "event":
			if !related || r.Verb == "BOOKMARK" {
				continue
			}
			out = append(out, Hop{Time: r.Time, From: APIServer, To: Watch, Verb: r.Verb, Resource: r.Resource,
				Name: r.Name, RV: r.ResourceVersion})
		}
	}
	return out
}

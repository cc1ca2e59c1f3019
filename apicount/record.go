package apicount

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// RecordEnv names the file to which a Counter also records every request and
// every watch event, one JSON Hop a line, for `make trace-N`. Unset (the
// default), nothing is recorded and nothing but the counting runs: no stage
// changes its code to be traced, and an operator that is not traced pays
// nothing for it.
const RecordEnv = "APICOUNT_RECORD"

// Hop is one line of the recording: a request the operator sent (Kind
// "request"; Verb as Classify names it) or a watch event it received (Kind
// "event"; Verb ADDED, MODIFIED, DELETED, BOOKMARK or ERROR).
type Hop struct {
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"`
	Verb      string    `json:"verb"`
	Resource  string    `json:"resource"` // "loggers", "loggers/status"
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name,omitempty"`
	Code      int       `json:"code,omitempty"`
	// ResourceVersion is the object's after a write or a read of one named
	// object, and the event's object's for an event.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// AuditID is the API server's ID of the request (its Audit-Id header):
	// the same request in the audit log.
	AuditID string `json:"auditID,omitempty"`
	Error   string `json:"error,omitempty"`
}

// recorder appends Hops to a file. One per process, whatever the number of
// Counters or Wrap calls.
type recorder struct {
	mu sync.Mutex
	f  *os.File
}

var (
	recordOnce sync.Once
	theRecord  *recorder
)

// openRecorder opens the file RecordEnv names, or returns nil when it is
// unset or cannot be opened (said on stderr: the operator runs on, not
// recorded).
func openRecorder() *recorder {
	recordOnce.Do(func() {
		path := os.Getenv(RecordEnv)
		if path == "" {
			return
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fmt.Fprintf(os.Stderr, "apicount: %s=%s: %v; this run is not recorded (unset %s, or name a file in a folder that exists)\n", RecordEnv, path, err, RecordEnv)
			return
		}
		theRecord = &recorder{f: f}
	})
	return theRecord
}

// write appends one line. One Write call per line, so that a reader of the
// file never sees half a line of a finished hop.
func (r *recorder) write(h Hop) {
	b, err := json.Marshal(h)
	if err != nil {
		return
	}
	r.mu.Lock()
	// A line that cannot be written is a gap in the trace; the operator
	// it records must not fail for it.
	_, _ = r.f.Write(append(b, '\n'))
	r.mu.Unlock()
}

type recordingRoundTripper struct {
	next http.RoundTripper
	rec  *recorder
}

func (r recordingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	k := Classify(req.Method, req.URL.Path, req.URL.Query().Get("watch"))
	h := Hop{Time: time.Now(), Kind: "request", Verb: k.Verb, Resource: k.Resource}
	h.Namespace, h.Name = objectOf(req.URL.Path)
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		h.Error = err.Error()
		r.rec.write(h)
		return resp, err
	}
	h.Code, h.AuditID = resp.StatusCode, resp.Header.Get("Audit-Id")
	ct := resp.Header.Get("Content-Type")
	switch {
	case k.Verb == "WATCH" && resp.StatusCode == http.StatusOK:
		// The events follow in the body, as the client reads it.
		resp.Body = tapWatch(resp.Body, ct, k.Resource, r.rec)
	case h.Name != "" || k.Verb == "CREATE":
		// One object (or a Status): small, and read whole by the client
		// anyway. Read it here to learn its resourceVersion, and the name
		// of a created one (a POST's path names only the collection).
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close() // read whole above; the client gets the copy
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if err == nil {
			m := metaOf(ct, body)
			h.ResourceVersion = m.ResourceVersion
			if h.Name == "" {
				h.Name = m.Name
			}
		}
	}
	r.rec.write(h)
	return resp, nil
}

// objectOf returns the namespace and name a request path addresses
// (/apis/<group>/<version>/namespaces/<ns>/<resource>/<name>[/<sub>]), each
// "" when it has none. Written out rather than taken from k8s.io/apiserver's
// RequestInfoFactory, which would link the API server's packages into every
// stage's operator.
func objectOf(path string) (namespace, name string) {
	parts, _, ok := apiPath(path)
	if !ok {
		return "", ""
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		namespace, parts = parts[1], parts[2:]
	}
	if len(parts) >= 2 {
		name = parts[1]
	}
	return namespace, name
}

// metaOf decodes the metadata of one object in a response body: JSON, or
// protobuf in the API server's envelope ("k8s\x00", then a runtime.Unknown).
// Every Kubernetes object keeps its ObjectMeta in field 1, so decoding any of
// them as a PartialObjectMetadata skips the rest and keeps the metadata.
func metaOf(contentType string, body []byte) metav1.ObjectMeta {
	var p metav1.PartialObjectMetadata
	if strings.HasPrefix(contentType, "application/vnd.kubernetes.protobuf") {
		var u runtime.Unknown
		if len(body) < 4 || u.Unmarshal(body[4:]) != nil || p.Unmarshal(u.Raw) != nil {
			return metav1.ObjectMeta{}
		}
		return p.ObjectMeta
	}
	if json.Unmarshal(body, &p) != nil {
		return metav1.ObjectMeta{}
	}
	return p.ObjectMeta
}

// tapWatch returns a body that reads like body and records each watch event
// when the client has read the last byte of it: the time the client got it.
func tapWatch(body io.ReadCloser, contentType, resource string, rec *recorder) io.ReadCloser {
	return &watchTap{ReadCloser: body, resource: resource, rec: rec,
		protobuf: strings.HasPrefix(contentType, "application/vnd.kubernetes.protobuf")}
}

// maxEvent bounds what a tap holds while an event is incomplete; past it the
// tap stops decoding (and the client reads on, unaffected).
const maxEvent = 64 << 20

type watchTap struct {
	io.ReadCloser
	resource string
	rec      *recorder
	protobuf bool
	buf      []byte
	off      bool // stopped decoding
}

func (t *watchTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 && !t.off {
		t.buf = append(t.buf, p[:n]...)
		t.decode()
	}
	return n, err
}

// decode records the complete events at the front of buf: JSON objects one
// a line (the API server ends each with a newline), or protobuf frames (a
// 4-byte big-endian length, then a metav1.WatchEvent whose object is in the
// envelope metaOf reads).
func (t *watchTap) decode() {
	for {
		var typ string
		var m metav1.ObjectMeta
		if t.protobuf {
			if len(t.buf) < 4 {
				break
			}
			size := int(binary.BigEndian.Uint32(t.buf))
			if len(t.buf) < 4+size {
				break
			}
			var e metav1.WatchEvent
			if e.Unmarshal(t.buf[4:4+size]) == nil {
				typ, m = e.Type, metaOf("application/vnd.kubernetes.protobuf", e.Object.Raw)
			}
			t.buf = t.buf[4+size:]
		} else {
			i := bytes.IndexByte(t.buf, '\n')
			if i < 0 {
				break
			}
			var e struct {
				Type   string                       `json:"type"`
				Object metav1.PartialObjectMetadata `json:"object"`
			}
			if json.Unmarshal(t.buf[:i], &e) == nil {
				typ, m = e.Type, e.Object.ObjectMeta
			}
			t.buf = t.buf[i+1:]
		}
		if typ != "" {
			t.rec.write(Hop{Time: time.Now(), Kind: "event", Verb: typ, Resource: t.resource,
				Namespace: m.Namespace, Name: m.Name, ResourceVersion: m.ResourceVersion})
		}
	}
	if len(t.buf) > maxEvent {
		t.buf, t.off = nil, true
	}
}

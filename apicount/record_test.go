package apicount

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestObjectOf(t *testing.T) {
	for path, want := range map[string][2]string{
		"/apis/example.com/v1/namespaces/lab/loggers/audit/status": {"lab", "audit"},
		"/apis/example.com/v1/namespaces/lab/loggers":              {"lab", ""},
		"/apis/apps/v1/watch/namespaces/lab/deployments/x":         {"lab", "x"},
		"/api/v1/namespaces/lab":                                   {"", "lab"},
		"/apis/example.com/v1/loggers":                             {"", ""},
		"/version":                                                 {"", ""},
	} {
		ns, name := objectOf(path)
		if ns != want[0] || name != want[1] {
			t.Errorf("objectOf(%s) = %q, %q; want %q, %q", path, ns, name, want[0], want[1])
		}
	}
}

// protobufEnvelope is how the API server sends one object as protobuf.
func protobufEnvelope(t *testing.T, obj interface{ Marshal() ([]byte, error) }) []byte {
	raw, err := obj.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	u := runtime.Unknown{Raw: raw}
	b, err := u.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte("k8s\x00"), b...)
}

// TestDecodeWatch: events of a JSON watch and of a protobuf one (as
// controller-runtime watches Deployments) are recorded with their objects'
// names and resourceVersions.
func TestDecodeWatch(t *testing.T) {
	file := filepath.Join(t.TempDir(), "record.jsonl")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{f: f}

	var js bytes.Buffer
	if err := json.NewEncoder(&js).Encode(map[string]any{"type": "ADDED", "object": map[string]any{
		"kind": "Logger", "metadata": map[string]any{"name": "a", "namespace": "lab", "resourceVersion": "7"}, "spec": map[string]any{"replicas": 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(tapWatch(io.NopCloser(&js), "application/json", "loggers", rec)); err != nil {
		t.Fatal(err)
	}

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "logger-a", Namespace: "lab", ResourceVersion: "9"}}
	ev := metav1.WatchEvent{Type: "MODIFIED", Object: runtime.RawExtension{Raw: protobufEnvelope(t, d)}}
	frame, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var pb bytes.Buffer
	if err := binary.Write(&pb, binary.BigEndian, uint32(len(frame))); err != nil {
		t.Fatal(err)
	}
	pb.Write(frame)
	// One byte a read: events split across reads are recorded once whole.
	if _, err := io.ReadAll(tapWatch(io.NopCloser(iotest.OneByteReader(&pb)), "application/vnd.kubernetes.protobuf;stream=watch", "deployments", rec)); err != nil {
		t.Fatal(err)
	}

	b, _ := os.ReadFile(file)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []Hop{
		{Kind: "event", Verb: "ADDED", Resource: "loggers", Namespace: "lab", Name: "a", ResourceVersion: "7"},
		{Kind: "event", Verb: "MODIFIED", Resource: "deployments", Namespace: "lab", Name: "logger-a", ResourceVersion: "9"},
	}
	if len(lines) != len(want) {
		t.Fatalf("recorded %d lines, want %d:\n%s", len(lines), len(want), b)
	}
	for i, line := range lines {
		var h Hop
		if err := json.Unmarshal([]byte(line), &h); err != nil {
			t.Fatal(err)
		}
		h.Time = want[i].Time
		if h != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, h, want[i])
		}
	}
}

package trace

import (
	"os"
	"strings"
	"testing"
	"time"
)

// Audit lines as the kwok cluster's API server wrote them (fields the trace
// does not read left out): kubectl's create, the ReplicaSet controller's pod
// from a generateName, the garbage collector's delete.
const auditLines = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"create","user":{"username":"kwok-admin"},"userAgent":"kubectl/v1.36.3 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"loggers","namespace":"lab","name":"audit","apiGroup":"example.com","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-11-24T23:10:49.100000Z","stageTimestamp":"2026-11-24T23:10:49.103000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"create","user":{"username":"kwok-admin"},"userAgent":"kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/$Format/replicaset-controller","objectRef":{"resource":"pods","namespace":"lab","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-11-24T23:10:49.150000Z","stageTimestamp":"2026-11-24T23:10:49.152000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"delete","user":{"username":"kwok-admin"},"userAgent":"kube-controller-manager/v1.36.3 (linux/amd64) kubernetes/$Format/generic-garbage-collector","objectRef":{"resource":"deployments","namespace":"lab","name":"logger-audit","apiGroup":"apps","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-24T23:10:52.100000Z","stageTimestamp":"2026-11-24T23:10:52.104000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"patch","user":{"username":"kwok-admin"},"userAgent":"operator-flow/06-status-and-owners","objectRef":{"resource":"loggers","namespace":"lab","name":"audit","subresource":"status"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-24T23:10:49.200000Z","stageTimestamp":"2026-11-24T23:10:49.202000Z"}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"create","user":{"username":"kwok-admin"},"userAgent":"kubectl/v1.36.3 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"loggers","namespace":"other","name":"audit"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-11-24T23:10:49.100000Z","stageTimestamp":"2026-11-24T23:10:49.103000Z"}
`

var audit = Object{Resource: "loggers", Namespace: "lab", Name: "audit"}

func TestAuditHops(t *testing.T) {
	events := ParseAudit([]byte(auditLines + `{"kind":"Event","apiVers`)) // a half-written last line
	got := func(recorded bool) []string {
		var out []string
		for _, h := range AuditHops(events, audit, recorded) {
			out = append(out, h.From+" "+h.What())
		}
		return out
	}
	// (The version of a request to a Logger is the audit log's; Build
	// leaves it out where the Logger has one, as here.)
	want := []string{
		"kubectl CREATE loggers audit (v1) → 201",
		"kcm CREATE pods [replicaset] → 201",
		"gc DELETE deployments logger-audit → 200",
	}
	if g := got(true); strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("with the operator recorded:\n%s\nwant:\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
	// Without its recording, the operator's requests come from the audit log.
	if g := got(false); len(g) != 4 || g[3] != "worker PATCH loggers/status audit → 200" {
		t.Errorf("without the operator's recording: %q", g)
	}
}

func TestParseObject(t *testing.T) {
	for in, want := range map[string]string{"logger/lab/audit": "loggers/lab/audit", "ft/lab/paris-rome": "flighttickets/lab/paris-rome", "FlightTicket/x/y": "flighttickets/x/y"} {
		if o, err := ParseObject(in); err != nil || o.String() != want {
			t.Errorf("ParseObject(%q) = %v, %v; want %s", in, o, err, want)
		}
	}
	for _, bad := range []string{"logger/audit", "pod/lab/x", "logger//x"} {
		if _, err := ParseObject(bad); err == nil || !strings.Contains(err.Error(), "OBJ=") {
			t.Errorf("ParseObject(%q): want an error that says what OBJ should be, got %v", bad, err)
		}
	}
}

func TestRelated(t *testing.T) {
	ticket := Object{Resource: "flighttickets", Namespace: "lab", Name: "paris-rome"}
	for _, c := range []struct {
		o             Object
		res, ns, name string
		want          bool
	}{
		{audit, "loggers/status", "lab", "audit", true},
		{audit, "loggers", "lab", "audit-2", false},
		{audit, "deployments", "lab", "logger-audit", true},
		{audit, "pods", "lab", "logger-audit-945f95f8c-qnnnx", true},
		{audit, "events", "lab", "audit.18eb1dfd0f6819bd", true},
		{audit, "events", "lab", "logger-audit-945f95f8c.18eb1dfd0fec467e", true},
		{audit, "deployments", "other", "logger-audit", false},
		{ticket, "configmaps", "default", "lab.paris-rome", true},
		{ticket, "deployments", "lab", "logger-paris-rome", false},
	} {
		if got := c.o.Related(c.res, c.ns, c.name); got != c.want {
			t.Errorf("%s: Related(%s, %s, %s) = %v", c.o, c.res, c.ns, c.name, got)
		}
	}
}

func at(ms int) time.Time {
	return time.Date(2026, 11, 24, 23, 0, 0, ms*int(time.Millisecond), time.UTC)
}

func TestBuildFoldsAndMarks(t *testing.T) {
	stage, _ := StageNumber(6)
	status := func(ms int, rv string) Hop {
		return Hop{Time: at(ms), From: Worker, To: APIServer, Verb: "PATCH", Resource: "loggers/status", Name: "audit", Code: 200, RV: rv, Stored: true}
	}
	kwok := func(ms int, pod string) Hop {
		return Hop{Time: at(ms), From: Kwok, To: APIServer, Verb: "PATCH", Resource: "pods/status", Name: pod, Code: 200, Stored: true}
	}
	hops := []Hop{
		{Time: at(1), From: APIServer, To: Watch, Verb: "ADDED", Resource: "loggers", Name: "audit", RV: "5"},
		status(2, "6"),
		{Time: at(3), From: APIServer, To: Watch, Verb: "MODIFIED", Resource: "loggers", Name: "audit", RV: "6"},
		status(4, "6"), // nothing new: the API server kept resourceVersion 6
		kwok(5, "logger-audit-1"), kwok(6, "logger-audit-2"), kwok(7, "logger-audit-1"),
		// Once the object is being deleted, the last finalizer's removal
		// answers with the old resourceVersion, and the object goes.
		{Time: at(8), From: Kubectl, To: APIServer, Verb: "DELETE", Resource: "loggers", Name: "audit", Code: 200, Stored: true},
		{Time: at(8), From: Worker, To: APIServer, Verb: "PATCH", Resource: "loggers", Name: "audit", Code: 200, RV: "6", Stored: true},
		{Time: at(9), From: APIServer, To: Watch, Verb: "DELETED", Resource: "loggers", Name: "audit", RV: "8"},
	}
	tl := Build(stage, audit, at(0), at(10), hops)
	var got []string
	for _, h := range tl.Hops {
		got = append(got, h.What())
	}
	want := []string{
		"ADDED loggers audit rv 5",
		"PATCH loggers/status audit → 200 rv 6",
		"MODIFIED loggers audit rv 6",
		"PATCH loggers/status audit → 200 rv 6 (unchanged: nothing stored)",
		"PATCH pods/status (2 objects) → 200 ×3",
		"DELETE loggers audit → 200",
		"PATCH loggers audit → 200 rv 6",
		"DELETED loggers audit rv 8",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !tl.Hops[6].Stored {
		t.Error("the write before DELETED removed the last finalizer: it was stored")
	}
	md := tl.Mermaid()
	for _, line := range []string{"participant A as kube-apiserver", "participant E as etcd", "participant W as Manager cache",
		"A-->>W: +0.001s ADDED loggers audit rv 5", "A->>E: store ×3"} {
		if !strings.Contains(md, line) {
			t.Errorf("the Mermaid diagram has no line %q:\n%s", line, md)
		}
	}
}

// TestLogHops reads the log lines of stages 02 to 04 and of 05 and 06, and
// places a handed-over event after the operator received it.
func TestLogHops(t *testing.T) {
	day := time.Date(2026, 11, 24, 12, 0, 0, 0, time.Local)
	std := "23:08:36.000100 event ADDED    loggers lab/audit resourceVersion=812\n" +
		"23:08:36.000200 created Deployment lab/logger-audit\n" +
		"23:08:36.000300 in sync loggers lab/heartbeat\n"
	hops := LogHops([]byte(std), audit, day, Queue)
	if len(hops) != 2 || hops[0].From != Watch || hops[0].To != Queue || hops[0].What() != "ADDED loggers audit rv 812" ||
		!hops[1].IsNote() || hops[1].Verb != "created Deployment lab/logger-audit" {
		t.Fatalf("stage 04's lines: %+v", hops)
	}
	zapLines := "2026-11-24T23:08:36.123456789Z\tINFO\tcreated deployment\t" +
		`{"controller": "logger", "Logger": {"name":"audit","namespace":"lab"}, "namespace": "lab", "name": "audit", "reconcileID": "af27", "deployment": "logger-audit"}` + "\n" +
		"2026-11-24T23:08:36.2Z\tDEBUG\tevents\tEvent occurred\t" + `{"object": {"name":"audit","namespace":"lab"}, "reason": "Created"}` + "\n"
	hops = LogHops([]byte(zapLines), audit, day, Worker)
	if len(hops) != 1 || hops[0].Verb != "created deployment deployment=logger-audit" || hops[0].Time.Nanosecond() != 123456789 {
		t.Fatalf("stage 06's lines: %+v", hops)
	}

	// The log's microseconds can put the hand-over before the receipt.
	stage, _ := StageNumber(4)
	received := Hop{Time: at(5).Add(500 * time.Nanosecond), From: APIServer, To: Watch, Verb: "ADDED", Resource: "loggers", Name: "audit", RV: "812"}
	handed := Hop{Time: at(5), From: Watch, To: Queue, Verb: "ADDED", Resource: "loggers", Name: "audit", RV: "812"}
	tl := Build(stage, audit, at(0), at(10), []Hop{handed, received})
	if tl.Hops[0].To != Watch || tl.Hops[1].To != Queue {
		t.Errorf("the hand-over comes before the receipt: %+v", tl.Hops)
	}
}

// TestAuditLogMissing: a cluster made before the audit log was turned on
// gets a message that says how to fix it.
func TestAuditLogMissing(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := dir + "/kubeconfig"
	cfg := "apiVersion: v1\nkind: Config\ncurrent-context: kwok-old\ncontexts:\n- name: kwok-old\n  context: {cluster: kwok-old, user: kwok-old}\nclusters:\n- name: kwok-old\n  cluster: {server: https://127.0.0.1:1}\nusers:\n- name: kwok-old\n  user: {}\n"
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := AuditLog(dir, kubeconfig)
	if err == nil || !strings.Contains(err.Error(), "make cluster-down") {
		t.Errorf("want an error that says to recreate the cluster, got %v", err)
	}
}

// TestAdmissionNote: what admission wrote into the audit event of a write to
// the object becomes a note over the API server, after the write; who the
// client is and why it may (authorization) are not admission.
func TestAdmissionNote(t *testing.T) {
	line := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"create","user":{"username":"kwok-admin"},"userAgent":"kubectl/v1.36.3","objectRef":{"resource":"loggers","namespace":"lab","name":"audit","apiGroup":"example.com","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-11-24T23:10:49.100000Z","stageTimestamp":"2026-11-24T23:10:49.103000Z","annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"","logger-replicas/replicas":"1 (cap none)"}}` + "\n"
	var got []string
	for _, h := range AuditHops(ParseAudit([]byte(line)), audit, true) {
		got = append(got, h.From+" "+h.To+" "+h.What())
	}
	want := []string{
		"kubectl apiserver CREATE loggers audit (v1) → 201",
		"apiserver apiserver admission, logger-replicas/replicas: 1 (cap none)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("hops:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestConversionHops: module A3's conversion webhook logs a line per object
// it converts; the traced object's become the API server's call and the
// webhook's answer, converted or failed. The admission lines of the same
// log, other objects' conversions, and a reconcile's lines are not
// conversions.
func TestConversionHops(t *testing.T) {
	log := "2026-11-26T16:45:51.100000001Z\tINFO\tconversion-webhook\tconversion\t" +
		`{"namespace": "lab", "name": "audit", "from": "example.com/v2", "to": "example.com/v1", "converted": true}` + "\n" +
		"2026-11-26T16:45:51.2Z\tINFO\tconversion-webhook\tconversion\t" +
		`{"namespace": "lab", "name": "heartbeat", "from": "example.com/v2", "to": "example.com/v1", "converted": true}` + "\n" +
		"2026-11-26T16:45:51.3Z\tINFO\tconversion-webhook\tconversion\t" +
		`{"namespace": "lab", "name": "audit", "from": "example.com/v1", "to": "example.com/v2", "converted": false, "reason": "spec.timeInterval: must be at least 1"}` + "\n" +
		"2026-11-26T16:45:51.4Z\tINFO\tlogger-webhook\tadmission allowed\t" +
		`{"namespace": "lab", "name": "audit", "webhook": "mutate", "operation": "CREATE", "allowed": true}` + "\n"
	var got []string
	for _, h := range LogHops([]byte(log), audit, time.Now(), Worker) {
		got = append(got, h.From+" → "+h.To+" "+h.What())
	}
	want := []string{
		"apiserver → webhook ConversionReview loggers/audit example.com/v2 → example.com/v1",
		"webhook → apiserver converted",
		"apiserver → webhook ConversionReview loggers/audit example.com/v1 → example.com/v2",
		"webhook → apiserver failed: spec.timeInterval: must be at least 1",
		"apiserver → webhook AdmissionReview CREATE loggers/audit (mutate)",
		"webhook → apiserver allowed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("hops:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The API server's call is a request, drawn solid; the answer dashed.
	a3, _ := StageID("A3")
	md := Build(a3, audit, at(0), time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC), LogHops([]byte(log), audit, time.Now(), Worker)).Mermaid()
	for _, line := range []string{"A->>H: +", "H-->>A: +"} {
		if !strings.Contains(md, line) {
			t.Errorf("the Mermaid diagram has no %q:\n%s", line, md)
		}
	}
}

// TestVersions: where the Logger has two versions (A3), a request to the
// traced Logger names the version it was sent in, from the audit log, or
// for the operator's recorded requests through their audit ID; elsewhere,
// and for a ticket, no version is named. Runs of requests in different
// versions are not folded.
func TestVersions(t *testing.T) {
	a3, ok := StageID("a3")
	if !ok || a3.Dir != "advanced/A3-api-versions" || !a3.Converts(audit) || a3.Converts(Object{Resource: "flighttickets"}) {
		t.Fatalf("StageID(a3) = %+v, %v", a3, ok)
	}
	if g := a3.gvr("loggers"); g.Version != "v2" {
		t.Errorf("the trace reads A3's Loggers in %s, want the stored version, v2", g.Version)
	}
	events := ParseAudit([]byte(strings.Join([]string{
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"k1","stage":"ResponseComplete","verb":"get","user":{"username":"kwok-admin"},"userAgent":"kubectl/v1.36.3","objectRef":{"resource":"loggers","namespace":"lab","name":"audit","apiGroup":"example.com","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-24T23:00:00.001000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"k2","stage":"ResponseComplete","verb":"get","user":{"username":"kwok-admin"},"userAgent":"kubectl/v1.36.3","objectRef":{"resource":"loggers","namespace":"lab","name":"audit","apiGroup":"example.com","apiVersion":"v2"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-24T23:00:00.002000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"op1","stage":"ResponseComplete","verb":"patch","user":{"username":"kwok-admin"},"userAgent":"operator-flow/A3-api-versions","objectRef":{"resource":"loggers","namespace":"lab","name":"audit","subresource":"status","apiGroup":"example.com","apiVersion":"v2"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-24T23:00:00.003000Z"}`,
	}, "\n")))
	rec := ParseRecord([]byte(`{"time":"2026-11-24T23:00:00.003Z","kind":"request","verb":"PATCH","resource":"loggers/status","namespace":"lab","name":"audit","code":200,"resourceVersion":"7","auditID":"op1"}`))
	hops := [][]Hop{AuditHops(events, audit, true), RecordHops(rec, audit, AuditVersions(events, audit))}
	what := func(tl Timeline) string {
		var out []string
		for _, h := range tl.Hops {
			out = append(out, h.What())
		}
		return strings.Join(out, "\n")
	}
	want := "GET loggers audit (v1) → 200\nGET loggers audit (v2) → 200\nPATCH loggers/status audit (v2) → 200 rv 7"
	if got := what(Build(a3, audit, at(0), at(10), hops...)); got != want {
		t.Errorf("on A3:\n%s\nwant:\n%s", got, want)
	}
	six, _ := StageNumber(6)
	want = "GET loggers audit → 200 ×2\nPATCH loggers/status audit → 200 rv 7"
	if got := what(Build(six, audit, at(0), at(10), hops...)); got != want {
		t.Errorf("on 06:\n%s\nwant:\n%s", got, want)
	}
}

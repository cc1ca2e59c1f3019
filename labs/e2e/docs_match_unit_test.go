package e2e

import (
	"strings"
	"testing"
)

// TestLabDocsCompare pins the comparison rule of TestLabDocs: what may
// differ from the lab (time, padding, generated names) and what may not.
func TestLabDocsCompare(t *testing.T) {
	shown := `NAME                           PRINTS        INTERVAL   REPLICAS   STATE       AGE
logger.example.com/audit       audit-trail   30         1          Available   4m39s
logger.example.com/heartbeat   heartbeat     5          2          Available   5m54s`
	for _, tc := range []struct {
		name, shown, real string
		match             bool
	}{
		{"ages and padding differ", shown, `NAME   PRINTS   INTERVAL   REPLICAS   STATE   AGE
logger.example.com/audit   audit-trail   30   1   Available   2s
logger.example.com/heartbeat   heartbeat   5   2   Available   1m2s`, true},
		{"a missing row", shown, `NAME   PRINTS   INTERVAL   REPLICAS   STATE   AGE
logger.example.com/audit   audit-trail   30   1   Available   2s`, false},
		{"an extra row", shown, `NAME   PRINTS   INTERVAL   REPLICAS   STATE   AGE
logger.example.com/audit   audit-trail   30   1   Available   2s
logger.example.com/blocked   blocked   10   1   Available   2s
logger.example.com/heartbeat   heartbeat   5   2   Available   1m2s`, false},
		{"a renamed column", shown, strings.Replace(shown, "STATE", "PHASE", 1), false},
		{"a wrong state", shown, strings.Replace(shown, "Available   5m54s", "Unavailable   5m54s", 1), false},
		{"... stands for lines", "...\nNAME AGE\nlogger-audit 3s\n...", ">> applying\nNAME AGE\nlogger-audit 9m\n>> read on", true},
		{"without ..., the output starts and ends as shown", "NAME AGE\nlogger-audit 3s", ">> applying\nNAME AGE\nlogger-audit 9m", false},
		{"... in a line stands for text", `INFO	booked	{"controller": "flightticket", ..., "reconcileID": "0a3b008d-..."}`,
			`2026-11-23T20:09:45Z	INFO	booked	{"controller": "flightticket", "name": "x", "reconcileID": "5c1e3b2a-1d2e-4f00-9a1b-0123456789ab"}`, true},
		{"log times, resourceVersions, pids", "09:01:37.225030 event ADDED    flighttickets lab/x resourceVersion=2828\n>> (pid 17699)",
			"20:40:01.000001 event ADDED flighttickets lab/x resourceVersion=12\n>> (pid 3)", true},
		{"a different message", "error loggers lab/x: creating Deployment logger-x: ...; retry 3 in 20ms",
			"error loggers lab/x: creating Deployment logger-x: forbidden; retry 3 in 40ms", false},
	} {
		got := matchOutput(strings.Split(tc.shown, "\n"), strings.Split(tc.real, "\n"))
		if (got == "") != tc.match {
			t.Errorf("%s: match=%v, want %v (%s)", tc.name, got == "", tc.match, got)
		}
	}
	// A failure names the line where the outputs part.
	for _, tc := range []struct{ shown, real, says string }{
		{"a\nb 1s\nc", "a\nb 2m\nd", `the lab shows "c", where the real output has "d"`},
		{"a\nb", "x\na\nb", `starts with "x"`},
		{"a\nb", "a\nb\nx", `goes on with "x"`},
		{"a\nb\nc", "a\nb", `the lab shows "c", where the real output has no more lines`},
	} {
		if got := matchOutput(strings.Split(tc.shown, "\n"), strings.Split(tc.real, "\n")); !strings.Contains(got, tc.says) {
			t.Errorf("%q against %q: %q, want it to say %q", tc.shown, tc.real, got, tc.says)
		}
	}
	summary := "API requests made by this operator:\n  GET     deployments  33\n  GET     loggers  30\napi-requests total=63"
	if d := compareOutput(strings.Split(summary, "\n"), strings.Split("API requests made by this operator:\n  GET loggers 9\n  GET deployments 8\napi-requests total=17", "\n"), true); d != "" {
		t.Errorf("numbers vary, and with them the order: %s", d)
	}
	if d := compareOutput(strings.Split(summary, "\n"), strings.Split("API requests made by this operator:\n  GET loggers 9\n  LIST loggers 1\n  GET deployments 8\napi-requests total=18", "\n"), true); d == "" {
		t.Error("numbers vary, but a row the lab does not show must fail")
	}
	if m := missingLines([]string{"in sync loggers lab/a", "...", "in sync loggers lab/b"}, []string{"in sync loggers lab/b", "x", "in sync loggers lab/a"}, false); m != nil {
		t.Errorf("log lines in another order: missing %v", m)
	}
	if m := missingLines([]string{"in sync loggers lab/a", "in sync loggers lab/a"}, []string{"in sync loggers lab/a"}, false); len(m) != 1 {
		t.Errorf("a line shown twice must be logged twice: missing %v", m)
	}
}

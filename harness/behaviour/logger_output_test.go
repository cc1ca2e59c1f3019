package behaviour

import (
	"testing"
	"time"
)

func TestActivityTimes(t *testing.T) {
	log := "2026-11-25T01:02:03Z heartbeat-e2e is active\n2026-11-25T01:02:08Z heartbeat-e2e is active\n"
	times, err := activityTimes(log, "heartbeat-e2e")
	if err != nil {
		t.Fatal(err)
	}
	if len(times) != 2 || times[1].Sub(times[0]) != 5*time.Second {
		t.Fatalf("got %v, want two times 5s apart", times)
	}
	if got, _ := activityTimes("", "heartbeat-e2e"); len(got) != 0 {
		t.Errorf("an empty log gave %v", got)
	}
	for _, bad := range []string{
		"2026-11-25T01:02:03Z other is active",
		"heartbeat-e2e is active",
		"2026-11-25T01:02:03Z heartbeat-e2e is active\nsh: date: not found",
	} {
		if _, err := activityTimes(bad, "heartbeat-e2e"); err == nil {
			t.Errorf("log %q: no error", bad)
		}
	}
}

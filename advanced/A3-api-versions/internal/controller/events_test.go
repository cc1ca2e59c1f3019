package controller

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/client-go/tools/events"
)

// A Warning Event quotes the API server's refusal, which can be longer than
// the 1024 bytes an Event's note may have: the note is cut, so that the
// Event is not refused and lost.
func TestLongFailureNoteIsCut(t *testing.T) {
	rec := events.NewFakeRecorder(1)
	long := errors.New(strings.Repeat("é", 1500)) // 3000 bytes
	recordFailure(rec, testTicket(), "Hold", "Could not hold %d seat(s): %v", 2, long)
	e := <-rec.Events
	note := strings.TrimPrefix(e, "Warning Failed ")
	if len(note) > maxEventNote || !utf8.ValidString(note) || !strings.HasPrefix(note, "Could not hold 2 seat(s): éé") || !strings.HasSuffix(note, "...") {
		t.Errorf("note of %d bytes (valid UTF-8: %v): %.60q…", len(note), utf8.ValidString(note), note)
	}
}

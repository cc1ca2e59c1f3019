package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// TestDedupeWhileBusy: ten updates to a ticket, made while the only worker
// is busy, are synced once.
//
// The worker is kept busy without sleeping: the operator talks to the API
// server through a gate that holds back its status write to another ticket,
// "holder", until the test opens it. While the worker waits for that write,
// the test creates ticket "busy" and changes it ten times. Every event puts
// busy's key into the queue, and the queue keeps a key only once. The test
// opens the gate only after the operator has logged all eleven events, so
// when the worker gets to busy, its cache already holds the last version.
//
// What this guarantees, and so what the test asserts exactly: one sync books
// busy with its last spec, in one write. One more sync follows, and finds it
// in sync: that one is caused by the operator's own write (an update event
// like any other), not by the ten updates.
func TestDedupeWhileBusy(t *testing.T) {
	const updates = 10
	f := features.New("dedupe").
		Assess(fmt.Sprintf("%d updates to one ticket while the worker is busy make one sync that writes", updates), func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w := newWorld(t, cfg, "dedupe")
			holderPath := fmt.Sprintf("/apis/flights.com/v1/namespaces/%s/flighttickets/holder", w.NS)
			busyPath := fmt.Sprintf("/apis/flights.com/v1/namespaces/%s/flighttickets/busy", w.NS)
			g := newGate(t, w.C.Config, func(r *http.Request) bool {
				return r.Method == http.MethodPut && r.URL.Path == holderPath
			})
			// One worker, so that holding it holds the whole ticket queue; no
			// resync, whose extra pass over busy the counts below would include.
			op := harness.StartOperator(t, g.kubeconfig, w.Bin, "--namespace", w.NS, "--workers", "1", "--resync", "0")

			w.createTicket(t, "holder", "Oslo", "Bergen", 1)
			harness.Eventually(t, converge, "the worker to be held on ticket holder", func(context.Context) (bool, string, error) {
				return g.isHolding(), "no write to holder yet", nil
			})

			w.createTicket(t, "busy", "Oslo", "Town-0", 1)
			tickets := w.C.Dynamic.Resource(ticketsGVR).Namespace(w.NS)
			for i := 1; i <= updates; i++ {
				patch := fmt.Sprintf(`{"spec":{"to":"Town-%d"}}`, i)
				if _, err := tickets.Patch(ctx, "busy", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			harness.Eventually(t, converge, "the operator to receive all events of busy", func(context.Context) (bool, string, error) {
				n := op.CountLog("event", "flighttickets", w.NS+"/busy")
				return n == 1+updates, fmt.Sprintf("%d events", n), nil
			})
			if n := op.CountLog("flighttickets", w.NS+"/busy", "booked"); n != 0 {
				t.Fatalf("busy was synced while the only worker was held: %d bookings", n)
			}
			g.open()

			want := fmt.Sprintf("Booked 1 seat(s) from Oslo to Town-%d", updates)
			w.waitStatus(t, ticketsGVR, "busy", "message", want)
			op.WaitForLog(converge, "in sync flighttickets", w.NS+"/busy")
			bookings := op.CountLog("booked flighttickets", w.NS+"/busy")
			inSync := op.CountLog("in sync flighttickets", w.NS+"/busy")
			writes := g.count(http.MethodPut, busyPath)
			t.Logf("%d events of busy (1 create, %d updates) → %d sync that wrote (%d PUT), then %d in-sync pass; the operator's lines about busy:\n%s",
				1+updates, updates, bookings, writes, inSync, linesAbout(op.Log(), w.NS+"/busy"))
			if bookings != 1 || writes != 1 {
				t.Errorf("busy was booked %d times with %d writes; want one of each", bookings, writes)
			}
			if inSync != 1 {
				t.Errorf("%d in-sync passes of busy, want exactly 1 (after the operator's own write)", inSync)
			}
			if !strings.Contains(op.Log(), want) {
				t.Errorf("no log line books busy as %q", want)
			}
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

// linesAbout picks the log lines that name one object.
func linesAbout(log, key string) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, key+" ") || strings.HasSuffix(line, key) || strings.Contains(line, key+":") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

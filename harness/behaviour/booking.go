package behaviour

import (
	"context"
	"testing"

	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"
)

// booking: a FlightTicket is booked with the exact status of
// docs/behaviour.md, and a changed spec.number changes the message.
func booking(s Stage) features.Feature {
	var f *fixture
	return features.New("FlightTicket is booked").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "booking")
			f.start(t)
			return ctx
		}).
		Assess("a new ticket gets phase Booked and the documented message", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f.Create(t, ticketGVR, newTicket("amsterdam-lisbon", "Amsterdam", "Lisbon", 2))
			f.waitTicketBooked(t, "amsterdam-lisbon", "Amsterdam", "Lisbon", 2)
			return ctx
		}).
		Assess("editing spec.number updates the message", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f.patchSpec(t, ticketGVR, "amsterdam-lisbon", map[string]any{"number": 5})
			f.waitTicketBooked(t, "amsterdam-lisbon", "Amsterdam", "Lisbon", 5)
			return ctx
		}).
		Feature()
}

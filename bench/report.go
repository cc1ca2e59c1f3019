package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/operator-flow/operator-flow/apicount"
)

type floors struct {
	Loggers, Tickets time.Duration
	// LoggersCreated: until every floor Deployment exists. It is the floor
	// of a stage's own part of the Loggers' work (LoggersOperator).
	LoggersCreated time.Duration
}

// total adds up the operator's requests over all phases.
func (r StageResult) total() Requests {
	out := Requests{}
	for _, p := range r.Phases {
		for k, v := range p.Operator {
			out[k] += v
		}
	}
	return out
}

func (r StageResult) bound() int {
	b := 0
	for _, p := range r.Phases {
		b += p.Bound
	}
	return b
}

func (r StageResult) phase(name string) PhaseResult {
	for _, p := range r.Phases {
		if p.Name == name {
			return p
		}
	}
	return PhaseResult{}
}

// markdown renders the results as the table the README shows.
func markdown(results []StageResult, f floors, n, m int, took time.Duration) string {
	var b strings.Builder
	objects := float64(n + m)
	fmt.Fprintf(&b, "### make bench: %d FlightTickets and %d Loggers\n\n", n, m)
	fmt.Fprintf(&b, "Measured %s on %s/%s with %d cores; the run took %s.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), took.Round(time.Second))
	fmt.Fprintf(&b, "Floors, measured in the same run on the same workload, both kinds at once as for the stages: **Loggers %.1f s** (their Deployments applied straight to the cluster), **tickets %.1f s** (a minimal operator with no latency: as each create returns, one of two workers, the stages' default, writes the ticket's status once).\n\n",
		f.Loggers.Seconds(), f.Tickets.Seconds())

	b.WriteString("| stage | create: tickets | tickets / own floor | create: Loggers | Loggers: operator's part | edit | delete | requests / object | writes / bound | Events | GETs / object | idle-pass writes (objects changed) | peak RSS | CPU |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		c := r.phase("create")
		tot := r.total()
		total, _, _ := apicount.Totals(map[apicount.Key]int(tot))
		writes := tot.Sum(isWrite)
		idle := fmt.Sprintf("%d (%d)", r.IdleWrites, r.IdleChanged)
		if r.IdleWrites < 0 {
			idle = "not measured"
		}
		if r.IdleNote != "" {
			idle += "¹"
		}
		own := "–"
		if r.TicketFloor > 0 {
			own = fmt.Sprintf("%.2f×²", ratio(c.Tickets, r.TicketFloor))
		}
		edit := fmt.Sprintf("%.1f s", r.phase("edit").Both.Seconds())
		if r.phase("edit").Unfinished != "" {
			edit += "³"
		}
		fmt.Fprintf(&b, "| %s | %.1f s (%.2f×) | %s | %.1f s (%.2f×) | %.1f s (%.2f×) | %s | %.1f s | %.2f | %d / %d (%.2f×) | %d | %.2f | %s | %.0f MiB | %.1f s |\n",
			r.Stage,
			c.Tickets.Seconds(), ratio(c.Tickets, f.Tickets), own,
			c.Loggers.Seconds(), ratio(c.Loggers, f.Loggers),
			c.LoggersOperator.Seconds(), ratio(c.LoggersOperator, f.LoggersCreated),
			edit, r.phase("delete").Both.Seconds(),
			float64(total)/objects, writes, r.bound(), float64(writes)/float64(r.bound()), tot.Sum(isEvent),
			float64(tot.Sum(isGet))/objects, idle, r.PeakMiB, r.CPU.Seconds())
	}
	fmt.Fprintf(&b, "\n(×) is the time divided by the floor: tickets by the common ticket floor (%.1f s) in every row, Loggers by the Logger floor (%.1f s). *Loggers: operator's part*: until every Logger's Deployment exists with its spec and every Logger has a status (Available or not), against the time until the Logger floor's Deployments all exist (%.1f s); the rest of *create: Loggers* is the rollout by kube-controller-manager, the scheduler and kwok. *requests / object*: everything the operator sent over the three phases, per FlightTicket or Logger. *writes / bound*: its creates, updates, patches and deletes, Events left out, against the fewest any operator with the stage's behaviour needs (create: one status write per ticket, one Deployment and one status write per Logger; edit: one status write per ticket and one Deployment update per Logger; delete: one Deployment delete per Logger; with stage 06's seat ledger also a finalizer and a seat hold per ticket on create, a hold update on edit, and a hold delete and the finalizer's removal on delete, while the garbage collector deletes the Deployments). *Events*: the Events it recorded, a report to people rather than work on the objects. *idle-pass writes*: what a fresh operator wrote on converged objects by its own count, and in brackets how many objects changed meanwhile by the API server's account: tickets, Loggers and ConfigMaps with a new resourceVersion, Deployments with a new generation (kube-controller-manager keeps writing their status for a while after a rollout).\n",
		f.Tickets.Seconds(), f.Loggers.Seconds(), f.LoggersCreated.Seconds())
	for _, r := range results {
		if r.IdleNote != "" {
			fmt.Fprintf(&b, "\n¹ %s: %s\n", r.Stage, r.IdleNote)
		}
	}
	for _, r := range results {
		if r.TicketFloor > 0 {
			fmt.Fprintf(&b, "\n² %s: against its own floor, %.1f s, measured in the same run: the same floor run with each new ticket given what this stage's behaviour needs: a finalizer, a seat hold, then the status, and the Booked Event the stage records for each booking, each sent on a goroutine of its own, as client-go sends the stage's.\n",
				r.Stage, r.TicketFloor.Seconds())
		}
	}
	for _, r := range results {
		if u := r.phase("edit").Unfinished; u != "" {
			fmt.Fprintf(&b, "\n³ %s: %s.\n", r.Stage, u)
		}
	}

	b.WriteString("\n#### Requests by verb, as each operator sent them (all phases, start-up included)\n\n")
	verbs := []string{"LIST", "WATCH", "GET", "CREATE", "UPDATE", "PATCH", "DELETE"}
	b.WriteString("| stage | " + strings.Join(verbs, " | ") + " |\n|---|" + strings.Repeat("---|", len(verbs)) + "\n")
	for _, r := range results {
		tot := r.total()
		b.WriteString("| " + r.Stage)
		for _, v := range verbs {
			match := func(k apicount.Key) bool { return k.Verb == v }
			if v == "GET" {
				match = isGet // objects only; discovery (/api, /apis) is left out
			}
			fmt.Fprintf(&b, " | %d", tot.Sum(match))
		}
		b.WriteString(" |\n")
	}

	b.WriteString("\n#### Requests the API server counted for the workload's resources (apiserver_request_total, all clients, create phase)\n\n")
	b.WriteString("| stage | requests | of which writes | the bench's creates + the operator's writes |\n|---|---|---|---|\n")
	for _, r := range results {
		s := r.phase("create").Server
		fmt.Fprintf(&b, "| %s | %d | %d | %d + %d |\n", r.Stage, s.Sum(func(apicount.Key) bool { return true }), s.Sum(serverWrite), n+m, r.phase("create").Operator.Sum(apicount.Key.IsWrite))
	}
	b.WriteString("\nThe workload's resources are FlightTickets, Loggers, Deployments, ConfigMaps and Events. *of which writes* counts POST, PUT, PATCH, APPLY, DELETE and DELETECOLLECTION, from every client: the bench's own creates, the operator's writes (Events included) and kube-controller-manager's work on the Deployments and its Events. So it is at least the last column.\n")
	return b.String()
}

// summaryJSON is latest.json: per stage, the numbers a program (such as the
// bench's own e2e test) checks.
type summaryJSON struct {
	Tickets, Loggers int
	FloorSeconds     struct{ Tickets, Loggers, LoggersCreated float64 }
	Stages           []stageJSON
}

type stageJSON struct {
	Stage                                      string
	CreateTicketsSeconds, CreateLoggersSeconds float64
	OwnTicketFloorSeconds                      float64 // stage 06's own ticket floor; 0 for the others
	LoggersOperatorSeconds                     float64 // the operator's part of CreateLoggersSeconds
	Requests, Writes, Bound, Gets              int
	IdleWrites, IdleChanged                    int
	// The create phase: writes the API server counted for the workload's
	// resources (every client), and the operator's own writes, Events
	// included.
	CreateServerWrites, CreateOperatorWrites int
	PeakMiB, CPUSeconds                      float64
}

func writeJSON(path string, results []StageResult, f floors, n, m int) error {
	s := summaryJSON{Tickets: n, Loggers: m}
	s.FloorSeconds.Tickets, s.FloorSeconds.Loggers, s.FloorSeconds.LoggersCreated = f.Tickets.Seconds(), f.Loggers.Seconds(), f.LoggersCreated.Seconds()
	for _, r := range results {
		tot := r.total()
		total, _, _ := apicount.Totals(map[apicount.Key]int(tot))
		writes := tot.Sum(isWrite)
		c := r.phase("create")
		s.Stages = append(s.Stages, stageJSON{
			Stage: r.Stage, CreateTicketsSeconds: c.Tickets.Seconds(), CreateLoggersSeconds: c.Loggers.Seconds(),
			OwnTicketFloorSeconds: r.TicketFloor.Seconds(), LoggersOperatorSeconds: c.LoggersOperator.Seconds(),
			Requests: total, Writes: writes, Bound: r.bound(), Gets: tot.Sum(isGet),
			IdleWrites: r.IdleWrites, IdleChanged: r.IdleChanged, PeakMiB: r.PeakMiB, CPUSeconds: r.CPU.Seconds(),
			CreateServerWrites: c.Server.Sum(serverWrite), CreateOperatorWrites: c.Operator.Sum(apicount.Key.IsWrite),
		})
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// spread reports each stage's ratios over several rounds: every round's, and
// their median and range. The table above is the last round's.
func spread(rounds []round) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n#### The ratios over %d rounds\n\n", len(rounds))
	b.WriteString("The table above is the last round's. Each round measured the floors again, then every stage. Every ticket ratio is against the common ticket floor of its round; a stage with a floor of its own (06) also gets the ratio against that one.\n\n")
	b.WriteString("| stage | tickets: median (range) | each round: ratio (stage / floor) | tickets / own floor: median (range) | Loggers: median (range) | each round |\n|---|---|---|---|---|---|\n")
	for i, first := range rounds[0].results {
		var tickets, own, loggers []float64
		var times []string
		for _, r := range rounds {
			res := r.results[i]
			t, l := res.createRatios(r.floors)
			tickets, loggers = append(tickets, t), append(loggers, l)
			times = append(times, ticketCell(res, r.floors))
			if res.TicketFloor > 0 {
				own = append(own, ratio(res.phase("create").Tickets, res.TicketFloor))
			}
		}
		ownCell := "–"
		if len(own) > 0 {
			ownCell = medianRange(own)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", first.Stage, medianRange(tickets), strings.Join(times, ", "), ownCell, medianRange(loggers), ratios(loggers))
	}
	return b.String()
}

// ticketCell formats one round's ticket ratio against the common floor with
// the seconds it divides: "1.32 (13.8 / 10.5 s)".
func ticketCell(r StageResult, f floors) string {
	t, _ := r.createRatios(f)
	return fmt.Sprintf("%.2f (%.1f / %.1f s)", t, r.phase("create").Tickets.Seconds(), f.Tickets.Seconds())
}

// medianRange formats "1.31× (1.08–1.88×)".
func medianRange(xs []float64) string {
	s := slices.Sorted(slices.Values(xs))
	mid := len(s) / 2
	median := s[mid]
	if len(s)%2 == 0 {
		median = (s[mid-1] + s[mid]) / 2
	}
	return fmt.Sprintf("**%.2f×** (%.2f–%.2f×)", median, s[0], s[len(s)-1])
}

func ratios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(parts, ", ")
}

// serverWrite: the verbs of apiserver_request_total that change objects.
// The API server labels requests by HTTP method, not by RBAC verb: a create
// is POST, an update PUT, a server-side apply APPLY (a PATCH with the apply
// content type), a delete of a whole collection DELETECOLLECTION
// (k8s.io/apiserver/pkg/endpoints/metrics, CleanVerb).
func serverWrite(k apicount.Key) bool {
	switch k.Verb {
	case "POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION":
		return true
	}
	return false
}

func ratio(d, floor time.Duration) float64 {
	if floor <= 0 {
		return 0
	}
	return d.Seconds() / floor.Seconds()
}

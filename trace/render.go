package trace

import (
	"fmt"
	"io"
	"strings"
)

// used lists the participants the hops use, in diagram order, followed by
// any client the course does not name (by its user name).
func (tl Timeline) used() []string {
	seen := map[string]bool{}
	for _, h := range tl.Hops {
		seen[h.From], seen[h.To] = true, true
		if h.Stored {
			seen[Etcd] = true
		}
	}
	var out []string
	for _, p := range participantOrder {
		if seen[p.key] {
			out = append(out, p.key)
			delete(seen, p.key)
		}
	}
	for k := range seen {
		out = append(out, k)
	}
	return out
}

func (tl Timeline) since(h Hop) string {
	return fmt.Sprintf("+%.3fs", h.Time.Sub(tl.Start).Seconds())
}

// WriteText prints the trace for a terminal: one line per hop, with its time
// since the kubectl apply, who to whom, and what.
func (tl Timeline) WriteText(w io.Writer) {
	// The lines are gathered and written at once: a terminal or a
	// buffer, with nowhere to report a failed write.
	var b strings.Builder
	width := 0
	for _, p := range tl.used() {
		width = max(width, len([]rune(tl.Stage.Name(p))))
	}
	fmt.Fprintf(&b, "%s on stage %s: %d hops; +0.000s is %s\n", tl.Object, tl.Stage.Dir, len(tl.Hops),
		tl.Start.Format("15:04:05.000"))
	for _, h := range tl.Hops {
		from, to := tl.Stage.Name(h.From), tl.Stage.Name(h.To)
		if h.IsNote() {
			fmt.Fprintf(&b, "%9s  %s\n", tl.since(h), pad("["+from+"]", 2*width+3)+" "+h.What())
			continue
		}
		what := h.What()
		if h.Stored {
			what += ", stored in etcd"
		}
		fmt.Fprintf(&b, "%9s  %s → %s %s\n", tl.since(h), pad(from, width), pad(to, width), what)
	}
	_, _ = io.WriteString(w, b.String())
}

func pad(s string, n int) string {
	if k := len([]rune(s)); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

// Mermaid is the trace as a Mermaid sequenceDiagram. Requests are solid
// arrows, and so are the API server's calls to a webhook; watch events and a
// webhook's answers are dashed (as the labs draw them); a write the API
// server stored is followed by its store in etcd (inferred), and the
// operator's log lines are notes.
func (tl Timeline) Mermaid() string {
	var b strings.Builder
	b.WriteString("sequenceDiagram\n")
	alias := map[string]string{}
	for i, p := range tl.used() {
		a := fmt.Sprintf("P%d", i)
		for _, q := range participantOrder {
			if q.key == p {
				a = q.alias
			}
		}
		alias[p] = a
		fmt.Fprintf(&b, "    participant %s as %s\n", a, mermaidText(tl.Stage.Name(p)))
	}
	for _, h := range tl.Hops {
		text := mermaidText(tl.since(h) + " " + h.What())
		switch {
		case h.IsNote():
			fmt.Fprintf(&b, "    Note over %s: %s\n", alias[h.From], text)
		case h.From == APIServer && h.To != Webhook, h.From == Webhook:
			fmt.Fprintf(&b, "    %s-->>%s: %s\n", alias[h.From], alias[h.To], text)
		default:
			fmt.Fprintf(&b, "    %s->>%s: %s\n", alias[h.From], alias[h.To], text)
		}
		if h.Stored {
			store := "store"
			if h.Count > 1 {
				store = fmt.Sprintf("store ×%d", h.Count)
			}
			fmt.Fprintf(&b, "    %s->>%s: %s\n", alias[APIServer], alias[Etcd], store)
		}
	}
	return b.String()
}

// mermaidText keeps a message from ending the statement (;) or starting an
// entity code (#).
func mermaidText(s string) string {
	return strings.NewReplacer(";", ",", "#", "no. ").Replace(s)
}

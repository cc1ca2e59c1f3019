package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// What legitimately differs between the run a lab was copied from and this
// one, each replaced by a placeholder on both sides before lines are
// compared. Everything else must be equal: column names, rows, names,
// phases, messages, counts. Backoff waits (5ms, 1.28s) are not here: they
// are what lab 4 teaches.
var varying = []struct {
	re *regexp.Regexp
	to string
}{
	{regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<time>"}, // RFC 3339
	{regexp.MustCompile(`\b\d\d:\d\d:\d\d\.\d+\b`), "<time>"},                                   // stage 02-04 log lines
	{regexp.MustCompile(`\b[0-9a-f]{8}-([0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\.\.\.)`), "<uid>"},
	{regexp.MustCompile(`(resourceVersion[=: ]+"?)\d+`), "${1}<n>"},
	{regexp.MustCompile(`\bpid \d+`), "pid <n>"},
	{regexp.MustCompile(`\b([a-z0-9-]+)-[a-z0-9]{8,10}-[a-z0-9]{5}\b`), "${1}-<hash>"}, // pod names
	{regexp.MustCompile(`\b\d+m\d+\.\d+s\b`), "<duration>"},                            // bash's time
	{regexp.MustCompile(`[+-]?\d+(\.\d+)? [KMG]?iB\b`), "<size>"},
}

// age is a column of kubectl get: 0s, 88s, 2m5s, 11m, 3h.
var age = regexp.MustCompile(`^\d+[smhd](\d+[smh])?$`)

var digits = regexp.MustCompile(`\d+`)

// normalise makes one line comparable: column padding collapsed, ages and
// the varying values above replaced, a leading log timestamp dropped (the
// labs shorten some log lines by leaving it out). With numbers set, every
// number is a placeholder too (a "numbers vary" block).
func normalise(line string, numbers bool) string {
	fields := strings.Fields(line)
	for i, f := range fields {
		if age.MatchString(f) {
			fields[i] = "<age>"
		}
	}
	line = strings.Join(fields, " ")
	for _, v := range varying {
		line = v.re.ReplaceAllString(line, v.to)
	}
	line = strings.TrimPrefix(line, "<time> ")
	if numbers {
		line = digits.ReplaceAllString(line, "<n>")
	}
	return line
}

// pattern is the regexp for one shown line: the line itself, with "..."
// standing for any text, as the labs use it to shorten long lines.
func pattern(shown string) *regexp.Regexp {
	parts := strings.Split(shown, "...")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

// A line is one line of output, as printed and normalised.
type line struct{ raw, norm string }

// prepare normalises lines and drops the blank ones: kubectl's blank line
// between two lists says nothing.
func prepare(lines []string, numbers bool) []line {
	var out []line
	for _, l := range lines {
		if n := normalise(l, numbers); n != "" {
			out = append(out, line{strings.TrimSpace(l), n})
		}
	}
	return out
}

// compareOutput compares a command's real output with what the lab shows:
// with matchOutput, or, in a "numbers vary" block, as lists of lines in any
// order (a request summary is sorted by its counts), all of them unless the
// lab shows "...". It returns "" on a match, else what differs.
func compareOutput(shown, real []string, numbers bool) string {
	if !numbers {
		return matchOutput(shown, real)
	}
	if missing := missingLines(shown, real, true); len(missing) > 0 {
		return fmt.Sprintf("shown lines not in the real output: %q", missing)
	}
	want, got := prepare(shown, true), prepare(real, true)
	if !slices.Contains(want, line{"...", "..."}) && len(want) != len(got) {
		return fmt.Sprintf("the real output has %d lines, the lab shows %d", len(got), len(want))
	}
	return ""
}

// matchOutput compares an output with what the lab shows for it, line by
// line and in order. A shown line "..." stands for any number of lines; with
// none at the start or end, the outputs must start or end alike.
func matchOutput(shown, real []string) string {
	want, got := prepare(shown, false), prepare(real, false)
	// Runs of shown lines between "..." lines, each matching consecutive
	// real lines; the earliest place for each leaves most room for the rest.
	var runs [][]line
	run := []line{}
	for _, w := range want {
		if w.norm == "..." {
			runs, run = append(runs, run), []line{}
			continue
		}
		run = append(run, w)
	}
	runs = append(runs, run)
	pos := 0
	for i, run := range runs {
		from, to := pos, len(got)-len(run)
		if i == len(runs)-1 {
			from = max(from, to) // no "..." after: the output ends here
		}
		if i == 0 {
			to = min(to, pos) // no "..." before: the output starts here
		}
		found, best, bestAt := -1, -1, from
		for j := from; j <= to && found < 0; j++ {
			if n := matching(run, got, j); n == len(run) {
				found = j
			} else if n > best {
				best, bestAt = n, j
			}
		}
		if found >= 0 {
			pos = found + len(run)
			continue
		}
		// Say where the outputs part. The shown lines may be there, only
		// not where the lab puts them: a "..." may be missing.
		for j := pos; len(run) > 0 && j+len(run) <= len(got); j++ {
			if matching(run, got, j) == len(run) {
				if i == 0 && j > pos {
					return fmt.Sprintf("the real output starts with %q, before the lines the lab shows (a missing \"...\"?)", got[pos].raw)
				}
				return fmt.Sprintf("the real output goes on with %q after the lines the lab shows (a missing \"...\"?)", got[j+len(run)].raw)
			}
		}
		if best < 0 {
			best, bestAt = matching(run, got, from), from
		}
		switch {
		case len(run) == 0:
			return fmt.Sprintf("the real output goes on with %q, where the lab shows nothing more", got[pos].raw)
		case bestAt+best >= len(got):
			return fmt.Sprintf("the lab shows %q, where the real output has no more lines", run[best].raw)
		default:
			return fmt.Sprintf("the lab shows %q, where the real output has %q", run[best].raw, got[bestAt+best].raw)
		}
	}
	return ""
}

// matching counts the lines of run that match got from line at on, up to
// the first that does not.
func matching(run, got []line, at int) int {
	for k, w := range run {
		if at+k >= len(got) || !pattern(w.norm).MatchString(got[at+k].norm) {
			return k
		}
	}
	return len(run)
}

// missingLines is the comparison for logs, which goroutines write in an
// order that changes from run to run: every shown line ("..." aside) must
// match a line of its own in real, anywhere. It returns the shown lines
// that match none.
func missingLines(shown, real []string, numbers bool) []string {
	got := prepare(real, numbers)
	used := make([]bool, len(got))
	var missing []string
	for _, w := range prepare(shown, numbers) {
		if w.norm == "..." {
			continue
		}
		found := false
		for j, g := range got {
			if !used[j] && pattern(w.norm).MatchString(g.norm) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			missing = append(missing, w.raw)
		}
	}
	return missing
}

package e2e

import (
	"fmt"
	"regexp"
	"strings"
)

// A step is one thing a learner does at one place in a lab: run a fenced
// ```sh or ```console block, read a ```text block (the output of what ran
// before), or press Ctrl-C. Other fences (mermaid) are not steps.
type step struct {
	line  int             // 1-based: the opening fence, or the ctrl-c marker
	kind  string          // "sh", "console", "text" or "ctrl-c"
	body  []string        // the block's lines, fences left out
	marks map[string]mark // the doc-test markers just before the block
}

// A mark is one <!-- doc-test: NAME [ARG][: REASON] --> comment. The labs
// use them where a block cannot be run or compared as it stands:
//
//	skip: REASON       the block is not run (it cannot run unattended)
//	fails: REASON      the sh block's last command must fail
//	retry 30s: REASON  a command whose output does not match yet is run
//	                   again, until it does or 30 s have passed
//	foreground [N]: R  the sh block's last command runs until Ctrl-C (N
//	                   times, each in a terminal of its own); the text
//	                   blocks after it are its output, one per instance
//	ctrl-c             where the lab says to press Ctrl-C: the oldest
//	                   running foreground command gets SIGINT
//	log FILE           the text block shows lines of FILE, logged since the
//	                   block before it started, in any order
//	numbers vary: R    numbers in the shown output are not compared, nor
//	                   the order of its lines (see compareOutput)
type mark struct{ arg, reason string }

var markNames = []string{"skip", "fails", "retry", "foreground", "ctrl-c", "log", "numbers vary"}

var markRE = regexp.MustCompile(`^<!-- doc-test: (.*) -->$`)

// parseLab splits a lab into its steps, in document order.
func parseLab(md string) ([]step, error) {
	var steps []step
	var marks map[string]mark
	markLine := 0
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if m := markRE.FindStringSubmatch(line); m != nil {
			name, mk, err := parseMark(m[1])
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", i+1, err)
			}
			if name == "ctrl-c" {
				steps = append(steps, step{line: i + 1, kind: "ctrl-c"})
				continue
			}
			if marks == nil {
				marks, markLine = map[string]mark{}, i+1
			}
			marks[name] = mk
			continue
		}
		if !strings.HasPrefix(line, "```") {
			if line != "" && marks != nil {
				return nil, fmt.Errorf("line %d: a doc-test marker must come just before a fenced block", markLine)
			}
			continue
		}
		start, kind := i, strings.TrimPrefix(line, "```")
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: the block is never closed", start+1)
		}
		switch kind {
		case "sh", "console", "text":
			steps = append(steps, step{line: start + 1, kind: kind, body: lines[start+1 : i], marks: marks})
		default:
			if marks != nil {
				return nil, fmt.Errorf("line %d: doc-test markers before a ```%s block, which is not run", markLine, kind)
			}
		}
		marks = nil
	}
	return steps, nil
}

func parseMark(s string) (string, mark, error) {
	head, reason, _ := strings.Cut(s, ":")
	head = strings.TrimSpace(head)
	for _, name := range markNames {
		if head == name || strings.HasPrefix(head, name+" ") {
			return name, mark{arg: strings.TrimSpace(strings.TrimPrefix(head, name)), reason: strings.TrimSpace(reason)}, nil
		}
	}
	return "", mark{}, fmt.Errorf("unknown doc-test marker %q (known: %s)", s, strings.Join(markNames, ", "))
}

// A command is what a learner types at one prompt, with the output the lab
// shows for it (console blocks only).
type command struct {
	line  int // 1-based, in the .md
	text  string
	shown []string
}

// heredocRE finds the delimiter of a here-document: <<EOF, <<'EOF', <<-EOF.
var heredocRE = regexp.MustCompile(`<<-?\s*['"]?(\w+)['"]?`)

// commands splits a block into commands. In a console block a command
// starts at "$ " and the lines up to the next prompt are its output; in an
// sh block every line is a command. Either way a line ending in a backslash
// goes on, and a here-document belongs to the line that opens it.
func commands(s step) []command {
	var cmds []command
	for i := 0; i < len(s.body); i++ {
		line := s.body[i]
		if s.kind == "console" {
			if !strings.HasPrefix(line, "$ ") {
				if len(cmds) > 0 {
					cmds[len(cmds)-1].shown = append(cmds[len(cmds)-1].shown, line)
				}
				continue
			}
			line = strings.TrimPrefix(line, "$ ")
		} else if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		c := command{line: s.line + 1 + i, text: line}
		for strings.HasSuffix(c.text, `\`) && i+1 < len(s.body) {
			i++
			c.text += "\n" + s.body[i]
		}
		if m := heredocRE.FindStringSubmatch(c.text); m != nil {
			for i+1 < len(s.body) {
				i++
				c.text += "\n" + s.body[i]
				if strings.TrimSpace(s.body[i]) == m[1] {
					break
				}
			}
		}
		cmds = append(cmds, c)
	}
	return cmds
}

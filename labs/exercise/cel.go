package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Policies lists, per day-two module without Go of its own, the policy
// files whose CEL a learner writes. Each CEL "expression:" in them is cut
// (a match condition's, a variable's, a validation's, a mutation's); the
// messages, the audit annotations and everything else are given.
var Policies = map[string][]string{
	// The replicas cap, the team default, the operator's narrowed account.
	"A1": {"config/admission/logger-replicas.yaml", "config/admission/logger-team.yaml", "config/admission/operator-deployments.yaml"},
}

// expressionLine is a YAML line that holds a CEL expression: its indent, a
// list item's dash, and the value (or a block scalar's indicator).
var expressionLine = regexp.MustCompile(`^(\s*)(- )?expression:\s*(.*)$`)

// placeholders are what a cut expression becomes, by the list it is in:
// CEL that compiles and changes nothing (true admits, ” is no value,
// Object{} patches nothing), so the API server takes the policy, and the
// checks fail for what it does not do yet.
var placeholders = map[string]string{
	"matchConditions": `"true"`,
	"variables":       `"''"`,
	"validations":     `"true"`,
	"mutations":       `"Object{}"`,
}

// CopyPolicies copies module dir into dest without its e2e tests and its
// README, with the
// CEL of the policy files cut (only of the file only names, when it is
// set: a copy with one bug). It returns how many expressions each file had
// cut.
func CopyPolicies(id, dir, dest, only string) (map[string]int, error) {
	files := Policies[id]
	if only != "" {
		if !contains(files, only) {
			return nil, fmt.Errorf("module %s has no policy file %s to cut; its files are %s", id, only, strings.Join(files, ", "))
		}
		files = []string{only}
	}
	cut := map[string]int{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel == "e2e" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dest, rel), 0o755)
		}
		if rel == "README.md" {
			return nil // it quotes the expressions the learner writes
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if contains(files, filepath.ToSlash(rel)) {
			var n int
			src, n = cutCEL(src, id)
			if n == 0 {
				return fmt.Errorf("%s has no CEL expression to cut (labs/exercise's list is out of date)", path)
			}
			cut[filepath.ToSlash(rel)] = n
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dest, rel), src, info.Mode().Perm())
	})
	for _, f := range files {
		if _, ok := cut[f]; !ok && err == nil {
			err = fmt.Errorf("module %s has no %s (labs/exercise's list is out of date)", id, f)
		}
	}
	return cut, err
}

// cutCEL replaces every CEL expression in a policy file with a placeholder
// and a TODO above it. A block scalar (expression: >-, then indented
// lines) goes whole.
func cutCEL(src []byte, id string) ([]byte, int) {
	lines := strings.Split(string(src), "\n")
	var out []string
	list, cut := "", 0
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if key := strings.TrimSuffix(strings.TrimSpace(line), ":"); placeholders[key] != "" && strings.HasSuffix(strings.TrimSpace(line), ":") {
			list = key
		}
		m := expressionLine.FindStringSubmatch(line)
		if m == nil || list == "" {
			out = append(out, line)
			continue
		}
		indent, dash, value := m[1], m[2], m[3]
		if value == ">-" || value == ">" || value == "|" || value == "|-" {
			// The block is every following line indented deeper than the key.
			keyIndent := len(indent) + len(dash)
			for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) > keyIndent) {
				i++
			}
		}
		out = append(out,
			indent+"# TODO(lab "+id+"): write this expression (labs/"+id+"-admission-policies.md, Exercise).",
			indent+dash+"expression: "+placeholders[list])
		cut++
	}
	return []byte(strings.Join(out, "\n")), cut
}

// runPolicies writes the starting point of module id's exercise.
func runPolicies(id, dest, only string) error {
	dirs, _ := filepath.Glob(filepath.Join("advanced", id+"-*"))
	if len(dirs) != 1 {
		return fmt.Errorf("module %s does not exist; run this from the repository root", id)
	}
	if dest == "" {
		dest = filepath.Join("workspace", filepath.Base(dirs[0]))
	}
	if _, err := os.Stat(dest); err == nil {
		return fmt.Errorf("%s already exists. Keep working in it, or remove it to start over: rm -rf %s", dest, dest)
	}
	cut, err := CopyPolicies(id, dirs[0], dest, only)
	if err != nil {
		_ = os.RemoveAll(dest)
		return err
	}
	fmt.Printf(">> %s: module %s with the CEL of its policies cut out, each a TODO that admits everything until you write it:\n", dest, id)
	for _, f := range Policies[id] {
		if n, ok := cut[f]; ok {
			fmt.Printf("     %-44s %d expression(s)\n", f, n)
		}
	}
	fmt.Printf(">> your task: labs/%s.md, section 'Exercise'\n", filepath.Base(dirs[0]))
	fmt.Printf(">> try it:    kubectl apply -f %s/config/admission/   (the API server compiles your CEL)\n", filepath.ToSlash(dest))
	fmt.Printf(">> check it:  make check-%s   (module %s's e2e tests, on your copy)\n", id, id)
	fmt.Printf(">> stuck?     the reference is %s/ (make diff-%s shows it whole)\n", filepath.ToSlash(dirs[0]), id)
	return nil
}

// Package e2e proves that `make check-N` tells right from wrong, for every
// stage with an exercise: the starting point `make exercise-N` writes must
// fail it, naming the concept's checks; stage N's own operator must pass it;
// and a copy of stage N with one function of the concept cut out (one bug)
// must fail it too.
//
// Each case runs only the tests of the concept stage N adds (CHECK_RUN), so
// that the proof costs a minute per stage, not a whole suite per copy.
package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/operator-flow/operator-flow/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

var cases = []struct {
	stage int
	run   string // the concept's tests, as a go test -run pattern
	fails string // what the FAIL line of such a test starts with
	bug   string // the one function the buggy copy lacks
}{
	{2, "TestWatchResumesWhereItStopped", "WatchResumesWhereItStopped", "stream.receive"},
	{3, "TestBehaviour/drift", "Behaviour / drift", "handler"},
	{4, "TestRetryWithBackoff", "RetryWithBackoff", "controller.processNextWorkItem"},
	{5, "TestBehaviour/drift", "Behaviour / drift", "handleObject"},
	{6, "TestFinalizer$", "Finalizer", "FlightTicketReconciler.release"},
}

func TestCheckTellsRightFromWrong(t *testing.T) {
	kubeconfig := harness.Env().EnvConf().KubeconfigFile()
	for _, c := range cases {
		t.Run(fmt.Sprintf("check-%d", c.stage), func(t *testing.T) {
			stage := stageDir(t, c.stage)
			// The copies go where a learner's do, under a name no stage
			// has: go build finds their imports there, and go test ./...
			// skips folders whose names start with "_".
			start, made := exerciseCopy(t, fmt.Sprint(c.stage), "_check-e2e/start-"+stage)
			bug, _ := exerciseCopy(t, fmt.Sprint(c.stage), "_check-e2e/bug-"+stage, "-only", c.bug)
			lab := labExercise(t, c.stage)
			learner := "workspace/" + stage // where make exercise-N writes
			compareShown(t, lab, fmt.Sprintf("make exercise-%d", c.stage), strings.ReplaceAll(made, strings.TrimPrefix(start, "./"), learner))

			// Each failing wait is cut from a minute to 15 s, which changes
			// no verdict.
			out, err := check(t, c.stage, start, c.run, kubeconfig, "E2E_CONVERGE=15s")
			rejected(t, fmt.Sprint(c.stage), "the starting point make exercise-"+fmt.Sprint(c.stage)+" writes", c.fails, out, err)
			// The lab shows this run's output: the same lines, numbers aside.
			compareShown(t, lab, fmt.Sprintf("CHECK_RUN=%s make check-%d", shellQuote(c.run), c.stage), strings.ReplaceAll(out, start, "./"+learner))

			out, err = check(t, c.stage, bug, c.run, kubeconfig, "E2E_CONVERGE=15s")
			rejected(t, fmt.Sprint(c.stage), "stage "+stage+" without "+c.bug, c.fails, out, err)

			out, err = check(t, c.stage, "./"+stage, c.run, kubeconfig)
			if err != nil || !strings.Contains(out, "works: well done") || strings.Contains(out, "FAIL  ") {
				t.Errorf("check-%d on ./%s (the reference) must pass; it said (err=%v):\n%s", c.stage, stage, err, out)
			}
		})
	}
}

// TestCheckRunsTheUnitTestsOfTheCopy: check-4, check-5 and check-6 run the
// unit tests of the learner's copy too. A copy whose operator passes the
// e2e tests, but whose own quick tests fail, is not done: here the
// reference with one more unit test that fails, named so that the
// concept's -run pattern selects it.
func TestCheckRunsTheUnitTestsOfTheCopy(t *testing.T) {
	kubeconfig := harness.Env().EnvConf().KubeconfigFile()
	for _, c := range cases {
		if c.stage < 4 {
			continue
		}
		t.Run(fmt.Sprintf("check-%d", c.stage), func(t *testing.T) {
			stage := stageDir(t, c.stage)
			dir := map[int]string{4: ".", 5: "internal/controller", 6: "internal/controller"}[c.stage]
			copied := plainCopy(t, stage, "_check-e2e/unit-"+stage)
			test, sub, _ := strings.Cut(strings.TrimSuffix(c.run, "$"), "/")
			body := `t.Error("a unit test of the copy fails")`
			if sub != "" {
				body = fmt.Sprintf("t.Run(%q, func(t *testing.T) { %s })", sub, body)
			}
			pkg := map[int]string{4: "main", 5: "controller", 6: "controller"}[c.stage]
			src := fmt.Sprintf("package %s\n\nimport \"testing\"\n\nfunc %s(t *testing.T) { %s }\n", pkg, test, body)
			if err := os.WriteFile(harness.RepoPath(copied, dir, "zz_fails_test.go"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := check(t, c.stage, "./"+copied, c.run, kubeconfig)
			// The check names a test without its Test prefix, as its e2e checks.
			rejected(t, fmt.Sprint(c.stage), "a copy whose unit test fails", strings.TrimPrefix(test, "Test"), out, err)
			if !strings.Contains(out, "PASS  "+c.fails) {
				t.Errorf("check-%d on the reference plus a failing unit test must pass the e2e check %q; it said:\n%s", c.stage, c.fails, out)
			}
		})
	}
}

// plainCopy copies stage, its e2e tests aside, to workspace/<name> with its
// imports of itself moved there, as labs/exercise does, but cuts nothing;
// it is removed at the end. It returns the copy's path from the root.
func plainCopy(t *testing.T, stage, name string) string {
	t.Helper()
	dest := filepath.Join("workspace", name)
	_ = os.RemoveAll(harness.RepoPath(dest))
	t.Cleanup(func() {
		_ = os.RemoveAll(harness.RepoPath(dest))
		_ = os.Remove(harness.RepoPath("workspace", "_check-e2e"))
		_ = os.Remove(harness.RepoPath("workspace"))
	})
	const module = "github.com/operator-flow/operator-flow/"
	src := harness.RepoPath(stage)
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if rel == "e2e" {
				return filepath.SkipDir
			}
			return os.MkdirAll(harness.RepoPath(dest, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".go") {
			b = []byte(strings.ReplaceAll(string(b), `"`+module+stage, `"`+module+filepath.ToSlash(dest)))
		}
		return os.WriteFile(harness.RepoPath(dest, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(dest)
}

// TestCheckTellsRightFromWrongA1 does the same for module A1, whose
// learner writes the policies' CEL: the starting point, a copy with one
// file's CEL cut, and the module itself.
func TestCheckTellsRightFromWrongA1(t *testing.T) {
	kubeconfig := harness.Env().EnvConf().KubeconfigFile()
	const module, run, fails = "A1-admission-policies", "TestTheRule", "TheRule / over the cap"
	start, made := exerciseCopy(t, "A1", "_check-e2e/start-"+module)
	bug, _ := exerciseCopy(t, "A1", "_check-e2e/bug-"+module, "-only", "config/admission/logger-replicas.yaml")
	lab := labSection(t, "A1-*.md")
	learner := "workspace/" + module
	compareShown(t, lab, "make exercise-A1", strings.ReplaceAll(made, strings.TrimPrefix(start, "./"), learner))

	out, err := checkAs(t, "A1", "MODULE_DIR", start, run, kubeconfig)
	rejected(t, "A1", "the starting point make exercise-A1 writes", fails, out, err)
	compareShown(t, lab, "CHECK_RUN="+run+" make check-A1", strings.ReplaceAll(out, start, "./"+learner))

	out, err = checkAs(t, "A1", "MODULE_DIR", bug, run, kubeconfig)
	rejected(t, "A1", "module A1 without the CEL of logger-replicas.yaml", fails, out, err)

	out, err = checkAs(t, "A1", "MODULE_DIR", "./advanced/"+module, run, kubeconfig)
	if err != nil || !strings.Contains(out, "works: well done") || strings.Contains(out, "FAIL  ") {
		t.Errorf("check-A1 on ./advanced/%s (the reference) must pass; it said (err=%v):\n%s", module, err, out)
	}
}

// TestCheckTellsRightFromWrongA2 does the same for module A2, whose learner
// writes the webhook: the starting point, a copy without check (the rule),
// and the module itself, on the rule's cases through the API server.
func TestCheckTellsRightFromWrongA2(t *testing.T) {
	kubeconfig := harness.Env().EnvConf().KubeconfigFile()
	const module, run, fails = "A2-admission-webhook", "TestAdmissionCases", "AdmissionCases"
	start, made := exerciseCopy(t, "A2", "_check-e2e/start-"+module)
	bug, _ := exerciseCopy(t, "A2", "_check-e2e/bug-"+module, "-only", "check")
	compareShown(t, labSection(t, "A2-*.md"), "make exercise-A2", strings.ReplaceAll(made, strings.TrimPrefix(start, "./"), "workspace/"+module))

	out, err := checkAs(t, "A2", "OPERATOR_PKG", start, run, kubeconfig, "E2E_CONVERGE=15s")
	rejected(t, "A2", "the starting point make exercise-A2 writes", fails, out, err)
	out, err = checkAs(t, "A2", "OPERATOR_PKG", bug, run, kubeconfig, "E2E_CONVERGE=15s")
	rejected(t, "A2", "module A2 without check", fails, out, err)
	out, err = checkAs(t, "A2", "OPERATOR_PKG", "./advanced/"+module, run, kubeconfig)
	if err != nil || !strings.Contains(out, "works: well done") || strings.Contains(out, "FAIL  ") {
		t.Errorf("check-A2 on ./advanced/%s (the reference) must pass; it said (err=%v):\n%s", module, err, out)
	}
}

// TestCheckTellsRightFromWrongA3 does the same for module A3, whose learner
// writes v1's conversion to and from the hub: the starting point, a copy
// with ConvertFrom written and ConvertTo still a TODO, and the module
// itself. check-A3 runs the unit tests of api/example/v1 on the copy, then
// the two e2e tests whose conversions the copy's operator serves, and must
// name a failure of each.
func TestCheckTellsRightFromWrongA3(t *testing.T) {
	kubeconfig := harness.Env().EnvConf().KubeconfigFile()
	const module = "A3-api-versions"
	start, made := exerciseCopy(t, "A3", "_check-e2e/start-"+module)
	bug, _ := exerciseCopy(t, "A3", "_check-e2e/bug-"+module, "-only", "Logger.ConvertTo")
	learner := "workspace/" + module
	lab, hasLab := labSectionIfAny(t, "A3-*.md")
	if hasLab {
		compareShown(t, lab, "make exercise-A3", strings.ReplaceAll(made, strings.TrimPrefix(start, "./"), learner))
	}

	began := time.Now()
	out, err := checkAs(t, "A3", "OPERATOR_PKG", start, "", kubeconfig)
	t.Logf("check-A3 on the starting point took %s", time.Since(began).Round(100*time.Millisecond))
	for _, fails := range []string{"ConvertFromHub", "SideBySide", "ConversionWebhookDown"} {
		rejected(t, "A3", "the starting point make exercise-A3 writes", fails, out, err)
	}
	if hasLab {
		// The copy's path, as the check prints it: with ./ in its
		// summary, without in a panic's file:line.
		shown := strings.ReplaceAll(strings.ReplaceAll(out, start, "./"+learner), strings.TrimPrefix(start, "./"), learner)
		compareShown(t, lab, "make check-A3", shown)
	}

	out, err = checkAs(t, "A3", "OPERATOR_PKG", bug, "", kubeconfig)
	for _, fails := range []string{"V1EditWins", "SideBySide"} {
		rejected(t, "A3", "module A3 without Logger.ConvertTo", fails, out, err)
	}

	began = time.Now()
	out, err = checkAs(t, "A3", "OPERATOR_PKG", "./advanced/"+module, "", kubeconfig)
	t.Logf("check-A3 on the reference took %s", time.Since(began).Round(100*time.Millisecond))
	if err != nil || !strings.Contains(out, "works: well done") || strings.Contains(out, "FAIL  ") {
		t.Errorf("check-A3 on ./advanced/%s (the reference) must pass; it said (err=%v):\n%s", module, err, out)
	}
	// Both halves ran: the unit tests' fuzz seeds, and the e2e tests.
	for _, pass := range []string{"PASS  FuzzHubRoundTrip / seed#0", "PASS  FuzzSpokeRoundTrip / seed#0", "PASS  SideBySide", "PASS  ConversionWebhookDown"} {
		if !strings.Contains(out, pass) {
			t.Errorf("check-A3 on the reference does not say %q:\n%s", pass, out)
		}
	}
}

// rejected checks that check-N failed, said so, and named the concept's
// checks among the failures.
func rejected(t *testing.T, n string, what, fails, out string, err error) {
	t.Helper()
	if err == nil || !strings.Contains(out, "Not there yet") || strings.Contains(out, "well done") {
		t.Errorf("check-%s on %s must fail; it said (err=%v):\n%s", n, what, err, out)
	}
	if !strings.Contains(out, "FAIL  "+fails) {
		t.Errorf("check-%s on %s must name the failing check %q; it said:\n%s", n, what, fails, out)
	}
}

// labExercise is the Exercise section of lab n.
func labExercise(t *testing.T, n int) string {
	t.Helper()
	return labSection(t, fmt.Sprintf("%02d-*.md", n))
}

// labSectionIfAny is labSection for a lab that may not be written yet: ok
// is false, and the test says so in its log, when no file matches.
func labSectionIfAny(t *testing.T, glob string) (section string, ok bool) {
	t.Helper()
	if m, _ := filepath.Glob(harness.RepoPath("labs", glob)); len(m) == 0 {
		t.Logf("no labs/%s yet: nothing to compare its Exercise section with", glob)
		return "", false
	}
	return labSection(t, glob), true
}

// labSection is the Exercise section of the lab the glob names.
func labSection(t *testing.T, glob string) string {
	t.Helper()
	m, _ := filepath.Glob(harness.RepoPath("labs", glob))
	if len(m) != 1 {
		t.Fatalf("lab %s: files %v", glob, m)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	_, ex, ok := strings.Cut(string(b), "\n## Exercise\n")
	if !ok {
		t.Fatalf("%s has no Exercise section", m[0])
	}
	if end := strings.Index(ex, "\n## "); end >= 0 {
		ex = ex[:end]
	}
	return ex
}

// compareShown finds "$ COMMAND" in a console block of the lab's Exercise
// section and checks that every line shown under it ("..." aside) is a line
// of what the command really printed, with numbers allowed to differ.
func compareShown(t *testing.T, lab, command, real string) {
	t.Helper()
	var shown []string
	in, found := false, false
	for _, line := range strings.Split(lab, "\n") {
		switch {
		case line == "$ "+command:
			in, found = true, true
		case in && (strings.HasPrefix(line, "$ ") || strings.HasPrefix(line, "```")):
			in = false
		case in:
			shown = append(shown, line)
		}
	}
	if !found {
		t.Errorf("the lab's Exercise section does not show \"$ %s\" in a console block", command)
		return
	}
	if missing := missingLines(shown, strings.Split(real, "\n"), true); len(missing) > 0 {
		t.Errorf("the lab shows lines that \"%s\" did not print:\n%s\n\nit printed:\n%s", command, strings.Join(missing, "\n"), real)
	}
}

// shellQuote quotes a -run pattern the way the labs write it.
func shellQuote(s string) string {
	if strings.ContainsAny(s, "$|*") {
		return "'" + s + "'"
	}
	return s
}

// exerciseCopy writes workspace/<name> with labs/exercise, as make
// exercise-N does, and returns its package path and what the tool printed;
// it is removed at the end.
func exerciseCopy(t *testing.T, n string, name string, flags ...string) (string, string) {
	t.Helper()
	dest := filepath.Join("workspace", name)
	_ = os.RemoveAll(harness.RepoPath(dest)) // left over from an interrupted run
	t.Cleanup(func() {
		_ = os.RemoveAll(harness.RepoPath(dest))
		_ = os.Remove(harness.RepoPath("workspace", "_check-e2e")) // only when empty
		_ = os.Remove(harness.RepoPath("workspace"))               // only when empty
	})
	args := append(append([]string{"run", "./labs/exercise", "-dest", dest}, flags...), n)
	cmd := exec.Command("go", args...)
	cmd.Dir = harness.RepoPath()
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return "./" + filepath.ToSlash(dest), string(b)
}

// check runs what `make check-N` runs, with the operator package and the
// tests to run given, and env added to the environment.
func check(t *testing.T, stage int, pkg, run, kubeconfig string, env ...string) (string, error) {
	t.Helper()
	return checkAs(t, fmt.Sprint(stage), "OPERATOR_PKG", pkg, run, kubeconfig, env...)
}

// checkAs runs make check-ID's checker with variable (OPERATOR_PKG or
// MODULE_DIR) pointing at the copy under test.
func checkAs(t *testing.T, id, variable, pkg, run, kubeconfig string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", "run", "./labs/check", id)
	cmd.Dir = harness.RepoPath()
	// The tests' cluster is not the workshop's: a lab operator running on
	// the workshop cluster (named in .state/lab-operator.pid) is no reason
	// to refuse here. CLUSTER_NAME points the check at another pid file.
	cmd.Env = append(append(os.Environ(), variable+"="+pkg, "CHECK_RUN="+run, "E2E_KUBECONFIG="+kubeconfig, "CLUSTER_NAME=check-e2e"), env...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	t.Logf("check-%s with %s:\n%s", id, pkg, b.String())
	return b.String(), err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Command check runs stage N's e2e tests against a learner's operator in
// workspace/ and says, in plain words, which behaviours work and which do not.
//
//	go run ./labs/check 4        (what `make check-4` runs)
//
// It needs a cluster: `make check-N` provides one through E2E_KUBECONFIG, and
// stops the lab operator first (`make lab-stop`): a lab operator watches
// every namespace, and would act on the tests' objects too. Run directly,
// check refuses to start beside one.
//
// The operator under test is whatever OPERATOR_PKG names; by default the
// learner's copy, workspace/<stage N's folder>. A day-two module without Go
// of its own (A1) has policies checked instead: MODULE_DIR names the copy,
// by default workspace/<the module's folder>. Where the learner's code is
// pure functions (A3's conversion), the unit tests of its package on the
// copy run first, and only the e2e tests that run the learner's code
// (unitTests, e2eTests). CHECK_RUN limits the run to some tests, as
// `go test -run` does.
//
// Expected output, for the starting point that `make exercise-4` writes,
// within seconds: the operator panics as it starts, and each check fails at
// its first wait, naming the panic and the line it was raised at.
//
//	>> checking ./workspace/04-workqueue against stage 04's tests
//	>> the unit tests of ./workspace/04-workqueue, then every e2e test
//	FAIL  ...
//	FAIL  DedupeWhileBusy / dedupe / 10 updates to one ticket while the worker is busy make one sync that writes
//	      dedupe_test.go:48: the operator panicked: panic: TODO(lab 4): write controller.Run [recovered, repanicked]
//	      at workspace/04-workqueue/controller.go:92 (main.(*controller).Run)
//	      so stopped waiting for the worker to be held on ticket holder after 0.1s of 1m0s; last seen: no write to holder yet
//	...
//	0 of 11 checks pass. Not there yet: read the FAIL lines above, and compare with 'make diff-4' when you are stuck.
//
// It never says "well done" unless `go test` itself passed: a failure that
// a test records after its subtests ran (a cleanup, say) is a FAIL line of
// its own, and so is a failure outside any test.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// event is one line of `go test -json`.
type event struct {
	Action string
	Test   string
	Output string
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./labs/check N")
		os.Exit(2)
	}
	code, err := run(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(arg string) (int, error) {
	stage, id, env, err := target(arg)
	if err != nil {
		return 0, err
	}
	pkg := os.Getenv(env) // a copy other than workspace/'s (the tests of check)
	if pkg == "" {
		pkg = "./workspace/" + filepath.Base(stage)
		if _, err := os.Stat(pkg); err != nil {
			return 0, fmt.Errorf("%s does not exist yet: start the exercise with 'make exercise-%s'", pkg, id)
		}
	}
	if pid := labOperator(); pid != 0 {
		return 0, fmt.Errorf("a lab operator (pid %d) is running, and it would act on the tests' objects too; stop it first: make lab-stop", pid)
	}
	fmt.Printf(">> checking %s against %s's tests\n", pkg, name(stage))
	if id == "A1" {
		if err := waitPolicySchema(stage); err != nil {
			return 0, err
		}
	}

	// The unit tests first, on the copy, then the e2e tests: each a go test
	// of its own, so that the unit tests' verdict comes within seconds, and
	// a panic there, which ends their test binary, does not stop the e2e
	// tests.
	run := os.Getenv("CHECK_RUN")
	e2e := e2eTests[id]
	e2eRun := run
	if e2eRun == "" && len(e2e.tests) > 0 {
		e2eRun = "^(" + strings.Join(e2e.tests, "|") + ")$"
	}
	var suites []suite
	for _, u := range unitTests[id] {
		suites = append(suites, suite{strings.TrimSuffix(pkg+"/"+u, "/."), run})
	}
	suites = append(suites, suite{"./" + stage + "/e2e/", e2eRun})
	if len(suites) > 1 || e2eRun != run {
		fmt.Printf(">> %s\n", plan(suites[:len(suites)-1], run, e2e.tests, e2e.which))
	}

	// Each run's report is printed when it ends, and judged by itself: a
	// failure of go test that no check of its own explains is a FAIL line
	// of that run.
	ok, passed, total, failed := true, 0, 0, false
	for _, s := range suites {
		cmd := exec.Command("go", "test", "-json", "-count=1", "-timeout=20m", s.pkg)
		if s.run != "" {
			cmd.Args = append(cmd.Args, "-run", s.run)
		}
		cmd.Env = append(os.Environ(), env+"="+pkg)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return 0, err
		}
		// Build errors of the test package come on stderr.
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		r := collect(stdout)
		exit := cmd.Wait()
		var ee *exec.ExitError
		if exit != nil && !errors.As(exit, &ee) {
			return 0, exit
		}
		// A run in which no test matched CHECK_RUN is no failure.
		if !r.print(os.Stdout, exit != nil, stderr.String()) && (r.total > 0 || exit != nil) {
			ok = false
		}
		passed, total, failed = passed+r.passed, total+r.total, failed || exit != nil
	}
	if ok && total > 0 {
		fmt.Printf("%d of %d checks pass. %s works: well done.\n", passed, total, capitalize(name(stage)))
		if run := os.Getenv("CHECK_RUN"); run != "" {
			// A learner may take a narrowed pass for the whole stage.
			fmt.Printf("Only the checks CHECK_RUN=%q picks ran: run make check-%s without it for all of them.\n", run, id)
		}
		return 0, nil
	}
	if total == 0 && !failed {
		fmt.Printf("No check ran: CHECK_RUN=%q matches no test of %s.\n", os.Getenv("CHECK_RUN"), name(stage))
		return 1, nil
	}
	fmt.Printf("%d of %d checks pass. Not there yet: read the FAIL lines above, and compare with 'make diff-%s' when you are stuck.\n", passed, total, id)
	return 1, nil
}

// The probe waitPolicySchema installs: a mutating policy of its own, bound
// to one namespace, which labels a Logger created there; and the Logger it
// dry-runs there until the label shows the policy acted.
const probe = `apiVersion: v1
kind: Namespace
metadata:
  name: check-schema-probe
  labels: {operator-flow/check-schema-probe: "true"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: check-schema-probe
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - {apiGroups: ["example.com"], apiVersions: ["v1"], operations: ["CREATE"], resources: ["loggers"]}
  mutations:
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: 'Object{metadata: Object.metadata{labels: {"operator-flow/check-schema-probe": "mutated"}}}'
  reinvocationPolicy: Never
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: check-schema-probe
spec:
  policyName: check-schema-probe
  matchResources:
    namespaceSelector:
      matchLabels: {operator-flow/check-schema-probe: "true"}
`

const probeLogger = `{"apiVersion": "example.com/v1", "kind": "Logger", "metadata": {"name": "probe", "namespace": "check-schema-probe"}, "spec": {"name": "probe", "timeInterval": 5}}`

// waitPolicySchema installs module A1's CRDs and returns once a mutating
// admission policy can act on a Logger. Established is not enough: such a
// policy merges its patch with the object's schema, which the API server's
// policy plugin reads from its own /openapi/v3, refreshed every 5 s
// (k8s.io/apiserver pkg/admission/plugin/policy/mutating/patch
// typeconverter.go, typeConverterManager.Run); until then it refuses the
// write with "Resource kind example.com/v1, Kind=Logger not found"
// (mutating/dispatcher.go, dispatchOne), and on a fresh cluster A1's first
// test would see that.
func waitPolicySchema(stage string) error {
	kubectl := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(filepath.Join("bin", "kubectl"), append([]string{"--kubeconfig", os.Getenv("E2E_KUBECONFIG")}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	crds := filepath.Join(stage, "config", "crd")
	if out, err := kubectl("", "apply", "--server-side", "--force-conflicts", "-f", crds); err != nil {
		return fmt.Errorf("installing %s: %v\n%s", crds, err, out)
	}
	if out, err := kubectl("", "wait", "--for=condition=Established", "crd/loggers.example.com", "--timeout=30s"); err != nil {
		return fmt.Errorf("waiting for the Logger CRD: %v\n%s", err, out)
	}
	if out, err := kubectl(probe, "apply", "-f", "-"); err != nil {
		return fmt.Errorf("installing the schema probe: %v\n%s", err, out)
	}
	defer func() { _, _ = kubectl(probe, "delete", "--ignore-not-found", "--wait=false", "-f", "-") }()
	var out string
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		// Until the policy and its binding are in force (admission reads
		// them from informers), the Logger passes unlabelled.
		out, err = kubectl(probeLogger, "create", "--dry-run=server", "-o", "jsonpath={.metadata.labels}", "-f", "-")
		if err == nil && strings.Contains(out, "mutated") {
			return nil
		}
	}
	return fmt.Errorf("a mutating admission policy could not act on a Logger within a minute: %v\n%s", err, out)
}

// unitTests lists, per exercise, the packages of the copy whose unit tests
// run before the e2e tests ("." is the copy's own folder). They are the
// lab's quick tests of the functions the learner writes: a copy that fails
// them is not done, whatever the e2e tests say. A3's learner writes a
// conversion, pure functions whose rules (the annotation, the rounding, the
// nil maps) the unit tests' tables and fuzz seeds reach case by case, and
// the API server only through the few objects the e2e tests send.
var unitTests = map[string][]string{
	"4":  {"."},
	"5":  {"internal/controller"},
	"6":  {"internal/controller"},
	"A3": {"api/example/v1"},
}

// e2eTests is, per exercise, the e2e tests that run when CHECK_RUN does not
// say, and which they are. A3's other e2e tests convert through the test
// package's own converter, built from the module's reference types, and
// run code the exercise gives: they would pass whatever you write.
var e2eTests = map[string]struct {
	tests []string
	which string
}{
	"A3": {[]string{"TestSideBySide", "TestConversionWebhookDown"}, "whose conversions your operator serves"},
}

// suite is one go test of a check: a package, and its -run pattern ("" for
// every test).
type suite struct{ pkg, run string }

// plan says, when it is more than the e2e package's every test, what the
// check runs: the unit tests of the copy's packages, then the e2e tests.
func plan(units []suite, run string, tests []string, which string) string {
	var pkgs []string
	for _, u := range units {
		pkgs = append(pkgs, u.pkg)
	}
	if run != "" {
		if len(pkgs) == 0 {
			return fmt.Sprintf("the e2e tests CHECK_RUN=%q matches", run)
		}
		return fmt.Sprintf("the tests CHECK_RUN=%q matches: the unit tests of %s, then the e2e tests", run, strings.Join(pkgs, " and "))
	}
	e2e := "every e2e test"
	if len(tests) > 0 {
		e2e = fmt.Sprintf("the e2e tests %s: %s", which, strings.Join(tests, ", "))
	}
	if len(pkgs) == 0 {
		return e2e
	}
	return fmt.Sprintf("the unit tests of %s, then %s", strings.Join(pkgs, " and "), e2e)
}

// target finds what check-N checks: stage N's folder (N from 2 to 6), or
// day-two module N's (A1 to A3); the name make targets use (4, A1); and the
// variable that points its tests at the learner's copy: OPERATOR_PKG for
// an operator, MODULE_DIR for a module without Go of its own, whose
// learner writes policies.
func target(arg string) (dir, id, env string, err error) {
	if strings.HasPrefix(strings.ToUpper(arg), "A") {
		id = strings.ToUpper(arg)
		m, _ := filepath.Glob(filepath.Join("advanced", id+"-*"))
		if len(m) == 0 {
			return "", "", "", fmt.Errorf("module %s does not exist", id)
		}
		env = "MODULE_DIR"
		if _, err := os.Stat(filepath.Join(m[0], "main.go")); err == nil {
			env = "OPERATOR_PKG"
		}
		return m[0], id, env, nil
	}
	n, err := strconv.Atoi(strings.TrimLeft(arg, "0"))
	if err != nil || n < 2 || n > 6 {
		return "", "", "", fmt.Errorf("check-N takes N from 2 to 6, or a day-two module such as A1, not %q", arg)
	}
	m, _ := filepath.Glob(fmt.Sprintf("%02d-*", n))
	if len(m) == 0 {
		return "", "", "", fmt.Errorf("stage %d does not exist", n)
	}
	return m[0], strconv.Itoa(n), "OPERATOR_PKG", nil
}

// name is how the report calls it: "stage 04", "module A1".
func name(dir string) string {
	if strings.HasPrefix(dir, "advanced") {
		return "module " + strings.SplitN(filepath.Base(dir), "-", 2)[0]
	}
	return "stage " + strings.SplitN(dir, "-", 2)[0]
}

func capitalize(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// labOperator is the pid of the operator `make lab-N` started on this
// cluster, if it still runs, else 0. (lab.sh names its pid file after
// CLUSTER_NAME, as here.)
func labOperator() int {
	name := "lab-operator.pid"
	if c := os.Getenv("CLUSTER_NAME"); c != "" {
		name = "lab-operator-" + c + ".pid"
	}
	b, err := os.ReadFile(filepath.Join(".state", name))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	// Signal 0 checks that the process exists, and sends nothing.
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0
	}
	return pid
}

// results is what one `go test -json` run said, test by test.
type results struct {
	order   []string            // tests in the order they ended
	verdict map[string]string   // test -> "pass", "fail" or "skip"
	output  map[string][]string // test -> what it printed; "" is the package
	passed  int
	total   int
}

func collect(r io.Reader) *results {
	res := &results{verdict: map[string]string{}, output: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		switch e.Action {
		case "output", "build-output":
			res.output[e.Test] = append(res.output[e.Test], e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" {
				continue // the package's verdict: the exit status says it too
			}
			if _, seen := res.verdict[e.Test]; !seen {
				res.order = append(res.order, e.Test)
			}
			res.verdict[e.Test] = e.Action
		}
	}
	return res
}

// print writes one line per check and counts them, and reports whether all
// is well: every check passed, at least one ran, and go test exited 0.
//
// A check is a test without subtests, or a test whose own failure no failing
// subtest explains (e2e-framework records a failed feature setup or cleanup
// on the feature's test, after its assessments passed). Anything else that
// makes go test fail (a build error, a panic, TestMain, the timeout) is a
// FAIL line of its own, so that failed never reads as passed.
func (r *results) print(w io.Writer, failed bool, stderr string) bool {
	// The lines are gathered and written at once, to the terminal: there
	// is nowhere to report a failed write.
	var b strings.Builder
	ok := !failed
	for _, name := range r.order {
		v := r.verdict[name]
		if v == "skip" {
			continue
		}
		if hasChild(name, r.order) && (v == "pass" || r.failedChild(name)) {
			continue
		}
		r.total++
		if v == "pass" {
			r.passed++
			fmt.Fprintf(&b, "PASS  %s\n", words(name))
			continue
		}
		ok = false
		fmt.Fprintf(&b, "FAIL  %s\n", words(name))
		for _, line := range reasons(r.output[name]) {
			fmt.Fprintf(&b, "      %s\n", line)
		}
	}
	if failed && r.passed == r.total {
		// go test failed, and no check says why.
		r.total++
		lines := reasons(append(r.output[""], strings.SplitAfter(stderr, "\n")...))
		fmt.Fprintln(&b, "FAIL  the tests could not run to the end (go test failed outside any check)")
		for _, line := range lines {
			fmt.Fprintf(&b, "      %s\n", line)
		}
	}
	_, _ = io.WriteString(w, b.String())
	return ok && r.total > 0
}

func (r *results) failedChild(name string) bool {
	for _, other := range r.order {
		if strings.HasPrefix(other, name+"/") && r.verdict[other] == "fail" {
			return true
		}
	}
	return false
}

func hasChild(name string, all []string) bool {
	for _, other := range all {
		if strings.HasPrefix(other, name+"/") {
			return true
		}
	}
	return false
}

// words turns "TestBehaviour/a_FlightTicket_is_booked" into
// "Behaviour / a FlightTicket is booked".
func words(test string) string {
	parts := strings.Split(strings.TrimPrefix(test, "Test"), "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, "_", " ")
	}
	return strings.Join(parts, " / ")
}

// reasons keeps the lines a failing test printed about why it failed: the
// first six; or, when the operator crashed, only the harness's report of the
// crash (harness.Operator.Crash), at most six lines: not what the test
// printed before it, nor what came after it (the operator's output, which
// repeats the panic).
func reasons(lines []string) []string {
	var out []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || l == "FAIL" || l == "PASS" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") ||
			strings.HasPrefix(l, "FAIL\t") || strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "exit status") {
			continue
		}
		if len(l) > 300 {
			l = l[:300] + "…"
		}
		out = append(out, l)
	}
	for i, l := range out {
		if strings.HasPrefix(l, "panic: ") {
			// The test itself panicked (a unit test that called a TODO):
			// the panic and where, not the goroutine's frames.
			return append([]string{l}, panicSite(out[i+1:])...)
		}
		if !isCrash(l) {
			continue
		}
		// The report ends where the next message begins: its own lines
		// carry no file:line.
		end := i + 1
		for end < len(out) && !message.MatchString(out[end]) {
			end++
		}
		return out[i:min(end, i+6)]
	}
	return out[:min(6, len(out))]
}

// panicSite reads the stack trace of a panic that ended a test binary
// (its lines trimmed) and returns where the panic was raised and the test
// line that led there, "at FILE:LINE (FUNCTION)", FILE relative to the
// repository when it is in it. The panicking goroutine's frames, a function
// line and a file line each, start with the testing package's recovery and
// the runtime's panic(; the frame after the last panic( raised it.
func panicSite(trace []string) []string {
	var frames []string
	for i, l := range trace {
		if strings.HasPrefix(l, "goroutine ") {
			frames = trace[i+1:]
			break
		}
	}
	at := 0
	for i := 0; i+1 < len(frames) && !strings.HasPrefix(frames[i], "goroutine "); i += 2 {
		if strings.HasPrefix(frames[i], "panic(") {
			at = i + 2
		}
	}
	wd, _ := os.Getwd()
	var sites []string
	for i := at; i+1 < len(frames) && len(sites) < 2; i += 2 {
		fn, file := frames[i], frames[i+1]
		if strings.HasPrefix(fn, "testing.") || strings.HasPrefix(fn, "goroutine ") {
			break
		}
		if j := strings.LastIndex(file, " +0x"); j >= 0 {
			file = file[:j]
		}
		file = strings.TrimPrefix(file, wd+string(filepath.Separator))
		if j := strings.LastIndex(fn, "/"); j >= 0 {
			fn = fn[j+1:] // the package path says nothing the file does not
		}
		if j := strings.LastIndex(fn, "("); j > 0 && strings.HasSuffix(fn, ")") {
			fn = fn[:j] // the arguments, as hex words
		}
		sites = append(sites, fmt.Sprintf("at %s (%s)", file, fn))
	}
	return sites
}

// message is the start of a line that t.Log or t.Error printed: the
// file:line it was called from.
var message = regexp.MustCompile(`^[\w.-]+\.go:\d+: `)

// isCrash: the first line of the harness's report of an operator that
// crashed, after the file:line of the wait it ended.
func isCrash(line string) bool {
	return message.MatchString(line) && (strings.Contains(line, ": the operator panicked: ") || strings.Contains(line, ": the operator exited by itself"))
}

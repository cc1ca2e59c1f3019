// Command check runs stage N's e2e tests against a learner's operator in
// workspace/ and says, in plain words, which behaviours work and which do not.
//
//	go run ./labs/check 4        (what `make check-4` runs)
//
// It needs a cluster: `make check-N` provides one through E2E_KUBECONFIG.
// The operator under test is whatever OPERATOR_PKG names; by default the
// learner's copy, workspace/<stage N's folder>.
//
// Expected output, for a copy of stage 03 that does not have a workqueue yet:
//
//	>> checking ./workspace/04-workqueue against stage 04's tests
//	PASS  Behaviour / a FlightTicket is booked
//	FAIL  Retry / a Deployment blocked by a quota is created once the quota is lifted
//	      waiting 1m0s for logger-q Deployment: context deadline exceeded
//	...
//	7 of 9 checks pass. Not there yet: read the FAIL lines above.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	n, err := strconv.Atoi(strings.TrimLeft(arg, "0"))
	if err != nil || n < 2 || n > 6 {
		return 0, fmt.Errorf("check-N takes N from 2 to 6, not %q", arg)
	}
	matches, _ := filepath.Glob(fmt.Sprintf("%02d-*", n))
	if len(matches) == 0 {
		return 0, fmt.Errorf("stage %d does not exist", n)
	}
	stage := matches[0]
	pkg := os.Getenv("OPERATOR_PKG")
	if pkg == "" {
		pkg = "./workspace/" + stage
		if _, err := os.Stat(pkg); err != nil {
			return 0, fmt.Errorf("%s does not exist yet: start the exercise with 'make exercise-%d'", pkg, n)
		}
	}
	fmt.Printf(">> checking %s against stage %02d's tests\n", pkg, n)

	cmd := exec.Command("go", "test", "-json", "-count=1", "-timeout=20m", "./"+stage+"/e2e/")
	if run := os.Getenv("CHECK_RUN"); run != "" {
		cmd.Args = append(cmd.Args, "-run", run)
	}
	cmd.Env = append(os.Environ(), "OPERATOR_PKG="+pkg)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	results, output := map[string]string{}, map[string][]string{}
	var order []string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" {
			continue
		}
		switch e.Action {
		case "output":
			output[e.Test] = append(output[e.Test], e.Output)
		case "pass", "fail":
			if _, seen := results[e.Test]; !seen {
				order = append(order, e.Test)
			}
			results[e.Test] = e.Action
		}
	}
	buildFailed := cmd.Wait() != nil && len(results) == 0

	if buildFailed {
		fmt.Println("FAIL  the tests did not run at all: most likely your code does not compile. Try: go build " + pkg)
		return 1, nil
	}
	// Report the leaves: a test whose subtests are listed says nothing new.
	passed, total := 0, 0
	for _, name := range order {
		if hasChild(name, order) {
			continue
		}
		total++
		if results[name] == "pass" {
			passed++
			fmt.Printf("PASS  %s\n", words(name))
			continue
		}
		fmt.Printf("FAIL  %s\n", words(name))
		for _, line := range reasons(output[name]) {
			fmt.Printf("      %s\n", line)
		}
	}
	if passed == total && total > 0 {
		fmt.Printf("%d of %d checks pass. Stage %02d works: well done.\n", passed, total, n)
		return 0, nil
	}
	fmt.Printf("%d of %d checks pass. Not there yet: read the FAIL lines above, and compare with 'make diff-%d' when you are stuck.\n", passed, total, n)
	return 1, nil
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

// reasons keeps the lines a failing test printed about why it failed.
func reasons(lines []string) []string {
	var out []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "=== ") || strings.HasPrefix(l, "--- ") {
			continue
		}
		if len(l) > 300 {
			l = l[:300] + "…"
		}
		out = append(out, l)
		if len(out) == 6 {
			break
		}
	}
	return out
}

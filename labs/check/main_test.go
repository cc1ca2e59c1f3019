package main

import (
	"strings"
	"testing"
)

// stream builds a `go test -json` stream: each "Action Test [output]".
func stream(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		f := strings.SplitN(l, " ", 3)
		out := ""
		if len(f) == 3 {
			out = f[2] + "\n"
		}
		test := f[1]
		if test == "-" {
			test = ""
		}
		b.WriteString(`{"Action":"` + f[0] + `","Test":"` + test + `","Output":` + quote(out) + "}\n")
	}
	return b.String()
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, `"`, `\"`), "\n", `\n`) + `"`
}

// The checker says "well done" only when go test passed, and names every
// failure a learner must fix, whoever recorded it.
func TestVerdicts(t *testing.T) {
	for _, c := range []struct {
		name          string
		json          string
		failed        bool // go test's exit status was not 0
		stderr        string
		ok            bool
		passed, total int
		want          []string // lines the output must contain
		without       []string // and must not
	}{
		{
			name: "all leaves pass",
			json: stream("pass TestA/x", "pass TestA/y", "pass TestA", "pass TestB"),
			ok:   true, passed: 3, total: 3,
			want: []string{"PASS  A / x", "PASS  A / y", "PASS  B"},
		},
		{
			name:   "a leaf fails",
			json:   stream("output TestA/x     booking.go:23: waiting 1m0s for ticket t", "fail TestA/x", "pass TestA/y", "fail TestA"),
			failed: true, passed: 1, total: 2,
			want: []string{"FAIL  A / x", "booking.go:23: waiting 1m0s for ticket t", "PASS  A / y"},
		},
		{
			// e2e-framework records a failed feature cleanup on the
			// feature's test after its assessments passed.
			name:   "a parent fails although its subtests pass",
			json:   stream("pass TestF/booked", "output TestF     finalizer.go:57: tickets left to be released: 1", "fail TestF"),
			failed: true, passed: 1, total: 2,
			want: []string{"PASS  F / booked", "FAIL  F", "finalizer.go:57: tickets left to be released: 1"},
		},
		{
			// The harness's report of a crash says why, whatever the test
			// printed before it.
			name: "the operator crashed",
			json: stream("output TestA/x     kill.go:90: one", "output TestA/x     kill.go:91: two", "output TestA/x     kill.go:92: three",
				"output TestA/x     kill.go:93: four", "output TestA/x     kill.go:94: five", "output TestA/x     kill.go:95: six",
				"output TestA/x     kill.go:96: the operator panicked: panic: TODO(lab 6): write FlightTicketReconciler.release",
				"output TestA/x         at /work/workspace/06-status-and-owners/internal/controller/ledger.go:80 (controller.(*FlightTicketReconciler).release)",
				"output TestA/x     operator.go:109: operator output (operator-0):", "output TestA/x         panic: TODO(lab 6): write FlightTicketReconciler.release",
				"fail TestA/x", "fail TestA"),
			failed: true, passed: 0, total: 1,
			want:    []string{"FAIL  A / x", "kill.go:96: the operator panicked: panic: TODO(lab 6): write FlightTicketReconciler.release", "at /work/workspace/06-status-and-owners/internal/controller/ledger.go:80"},
			without: []string{"kill.go:95: six", "operator output"},
		},
		{
			// A unit test that called a TODO ends its test binary: the
			// panic, where it was raised and the test line that led there,
			// not the goroutine's frames.
			name: "a unit test panicked",
			json: stream("output TestConvertFromHub --- FAIL: TestConvertFromHub (0.00s)",
				"output TestConvertFromHub panic: TODO(lab A3): write Logger.ConvertFrom [recovered, repanicked]",
				"output TestConvertFromHub ", "output TestConvertFromHub goroutine 21 [running]:",
				"output TestConvertFromHub testing.tRunner.func1.2({0x81b920, 0x8f8580})",
				"output TestConvertFromHub     /usr/local/go/src/testing/testing.go:1974 +0x232",
				"output TestConvertFromHub panic({0x81b920?, 0x8f8580?})",
				"output TestConvertFromHub     /usr/local/go/src/runtime/panic.go:860 +0x13a",
				"output TestConvertFromHub github.com/x/workspace/A3-api-versions/api/example/v1.(*Logger).ConvertFrom(...)",
				"output TestConvertFromHub     /src/workspace/A3-api-versions/api/example/v1/logger_conversion.go:67",
				"output TestConvertFromHub github.com/x/workspace/A3-api-versions/api/example/v1.TestConvertFromHub(0x16d0bfa68488?)",
				"output TestConvertFromHub     /src/workspace/A3-api-versions/api/example/v1/logger_conversion_test.go:31 +0xb0",
				"output TestConvertFromHub testing.tRunner(0x16d0bfa68488, 0x8f4d40)",
				"output TestConvertFromHub     /usr/local/go/src/testing/testing.go:2036 +0xea",
				"fail TestConvertFromHub"),
			failed: true, passed: 0, total: 1,
			want: []string{"FAIL  ConvertFromHub\n      panic: TODO(lab A3): write Logger.ConvertFrom [recovered, repanicked]\n" +
				"      at /src/workspace/A3-api-versions/api/example/v1/logger_conversion.go:67 (v1.(*Logger).ConvertFrom)\n" +
				"      at /src/workspace/A3-api-versions/api/example/v1/logger_conversion_test.go:31 (v1.TestConvertFromHub)\n"},
			without: []string{"goroutine", "testing.go"},
		},
		{
			name:   "every test passed, but go test failed",
			json:   stream("pass TestA", "output - panic: operator did not stop", "fail -"),
			failed: true, passed: 1, total: 2,
			want: []string{"PASS  A", "FAIL  the tests could not run to the end", "panic: operator did not stop"},
		},
		{
			name:   "the tests did not build",
			json:   stream("build-output - ./x_test.go:3:28: undefined: y", "fail -"),
			failed: true, passed: 0, total: 1,
			want: []string{"FAIL  the tests could not run to the end", "undefined: y"},
		},
		{
			name:   "no test ran",
			json:   stream("output - testing: warning: no tests to run", "pass -"),
			passed: 0, total: 0,
		},
		{
			name: "skipped tests are no checks",
			json: stream("skip TestA", "pass TestB"),
			ok:   true, passed: 1, total: 1,
			want: []string{"PASS  B"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := collect(strings.NewReader(c.json))
			var out strings.Builder
			ok := r.print(&out, c.failed, c.stderr)
			if ok != c.ok || r.passed != c.passed || r.total != c.total {
				t.Errorf("ok=%v, %d of %d; want ok=%v, %d of %d\n%s", ok, r.passed, r.total, c.ok, c.passed, c.total, out.String())
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the output lacks %q:\n%s", w, out.String())
				}
			}
			for _, w := range c.without {
				if strings.Contains(out.String(), w) {
					t.Errorf("the output shows %q:\n%s", w, out.String())
				}
			}
		})
	}
}

package docs

import (
	"strings"
	"testing"
)

// TestChecksCatchBrokenQuotes feeds each check a quote that is wrong, as a
// doc drifting from the code would be, and fails when a check lets it pass:
// a check that cannot fail proves nothing.
func TestChecksCatchBrokenQuotes(t *testing.T) {
	src := strings.Split("func f() {\n\tqueue.Forget(key)\n\tqueue.Done(key)\n}", "\n")
	t.Run("quote", func(t *testing.T) {
		if got := unquoted([]string{"queue.Forget(key)", "...", "queue.Done(key)"}, src); got != "" {
			t.Errorf("a true quote is refused at %q", got)
		}
		if got := unquoted([]string{"queue.Done(key)", "queue.Forget(key)"}, src); got != "queue.Forget(key)" {
			t.Errorf("lines out of order pass (got %q)", got)
		}
		if got := unquoted([]string{"queue.Forget(item)"}, src); got == "" {
			t.Error("a changed line passes")
		}
	})
	t.Run("tree", func(t *testing.T) {
		good := []string{"04-workqueue/", "├── loggers.go    syncLogger, handleObject"}
		if p := checkTree(t, "04-workqueue", good); len(p) != 0 {
			t.Errorf("a true tree is refused: %v", p)
		}
		for _, bad := range []string{
			"├── controller.go    Run, handleObject", // handleObject is in loggers.go
			"├── nosuch.go        a file that is not there",
			"├── api/\n│   └── nosuch/      a folder that is not there",
		} {
			if p := checkTree(t, "04-workqueue", append([]string{"04-workqueue/"}, strings.Split(bad, "\n")...)); len(p) == 0 {
				t.Errorf("tree line %q passes", bad)
			}
		}
	})
	t.Run("names", func(t *testing.T) {
		r := newResolver(t)
		lab4 := doc{path: "labs/04-workqueue.md", stage: "04-workqueue"}
		for _, good := range []string{"make lab-4", "make e2e STAGE=4", "--workers=2", "--dry-run=server", "config.go",
			"hack/update-codegen.sh", "processNextWorkItem", "cache.WaitForCacheSync", "queue.AddRateLimited(key)", "TestParallelWorkers"} {
			if p := r.check(lab4, good); p != "" {
				t.Errorf("`%s` is refused: %s", good, p)
			}
		}
		lab6 := doc{path: "labs/06-status-and-owners.md", stage: "06-status-and-owners"}
		if p := r.check(lab6, "+kubebuilder:subresource:status"); p != "" {
			t.Errorf("a true marker is refused: %s", p)
		}
		if p := r.check(lab6, "+kubebuilder:subresource:scale"); p == "" {
			t.Error("a marker 06 does not carry passes")
		}
		for _, bad := range []string{"make lab-44x", "make deploy", "--no-such-flag", "--leader-elect", "hack/nosuch.sh",
			"processNextItem", "cache.WaitForCachesSync", "queue.AddRateLimitted(key)", "TestNoSuchTest", "signal.NotifyContex"} {
			if p := r.check(lab4, bad); p == "" {
				t.Errorf("`%s` passes", bad)
			}
		}
	})
	t.Run("steps", func(t *testing.T) {
		r := newResolver(t)
		d := doc{path: "06-status-and-owners/README.md", stage: "06-status-and-owners"}
		if p := r.checkStep(d, "LoggerReconciler.Reconcile", []int{1, 4}); p != "" {
			t.Errorf("a true step is refused: %s", p)
		}
		for _, bad := range []stepRef{{"LoggerReconciler.Reconcile", []int{9}}, {"Reconcile", []int{1}}, {"NoSuchFunc", []int{1}}} {
			if p := r.checkStep(d, bad.fn, bad.steps); p == "" {
				t.Errorf("step %v of %s passes", bad.steps, bad.fn)
			}
		}
		if refs := stepRefs("see `Reconcile` steps 1–3, then step 4 of `adopt`"); len(refs) != 2 || len(refs[0].steps) != 3 || refs[1].fn != "adopt" {
			t.Errorf("step references read as %+v", refs)
		}
	})
	t.Run("links", func(t *testing.T) {
		if p := checkLink("docs/concepts.md", "../labs/04-workqueue.md#do-it"); p != "" {
			t.Errorf("a true link is refused: %s", p)
		}
		for _, bad := range []string{"../labs/04-workqueue.md#no-such-heading", "../labs/nosuch.md", "nosuch/"} {
			if checkLink("docs/concepts.md", bad) == "" {
				t.Errorf("link %s passes", bad)
			}
		}
	})
}

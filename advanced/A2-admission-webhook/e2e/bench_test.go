package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/admission"
)

// latency is one path's measurements.
type latency struct {
	Path         string  `json:"path"`
	N            int     `json:"n"`
	MedianMillis float64 `json:"median_ms"`
	P95Millis    float64 `json:"p95_ms"`
	MeanMillis   float64 `json:"mean_ms"`
}

// TestAdmissionLatency is `make bench-admission`: the latency of a Logger
// create (a server-side dry run: admission runs in full, nothing is written to etcd)
// in three namespaces of one cluster: one that no admission rule matches,
// one bound to A1's policies, one matched by this module's webhook. All
// three namespaces carry a cap and a team, so that every rule has work to
// do. The creates go round-robin over the three, so that whatever else the
// machine does at the time weighs on all alike. It runs only when
// ADMISSION_BENCH_N is set, and writes its table to ADMISSION_BENCH_OUT.
func TestAdmissionLatency(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ADMISSION_BENCH_N"))
	if n <= 0 {
		t.Skip("ADMISSION_BENCH_N is not set: this is make bench-admission")
	}
	out := os.Getenv("ADMISSION_BENCH_OUT")
	withCluster(t, "the latency of a Logger create", func(t *testing.T, cfg *envconf.Config) {
		w := harness.NewWorld(t, cfg, "a2-bench-webhook", modulePackage)
		plain := w.C.Namespace(t, "a2-bench-none")
		policyNS := w.C.Namespace(t, "a2-bench-policy")
		wh := installWebhook(t, w.C, w.NS, admissionregistrationv1.Fail)
		installPolicies(t, w.C, policyNS, policyNS)
		w.Start(t, append(append([]string{}, stage.Args[:2]...), wh.args...)...)
		labels := map[string]string{admission.MaxReplicasLabel: "10", admission.TeamLabel: "bench"}
		paths := []struct{ name, ns string }{
			{"no admission", plain},
			{"A1's policies (ValidatingAdmissionPolicy + MutatingAdmissionPolicy)", policyNS},
			{"A2's webhook (mutating + validating, operator on this machine)", w.NS},
		}
		for _, p := range paths[1:] {
			waitAdmissionActive(t, w.C, p.ns)
			setNamespaceLabels(t, w.C, p.ns, labels)
		}
		// A client without client-go's rate limiter (a negative QPS turns
		// it off): the harness's clients allow 200 requests a second, and
		// a wait for the limiter's next token would count as latency.
		rc := rest.CopyConfig(w.C.Config)
		rc.QPS = -1
		dyn, err := dynamic.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		create := func(ns string, i int) time.Duration {
			l := harness.NewLogger(fmt.Sprintf("bench-%d", i), "bench", 5, 3)
			start := time.Now()
			u, err := dyn.Resource(loggerGVR).Namespace(ns).Create(ctx, l, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			d := time.Since(start)
			if err != nil {
				t.Fatalf("dry-run create in %s: %v", ns, err)
			}
			if ns != plain && u.GetLabels()[admission.TeamLabel] != "bench" {
				t.Fatalf("dry-run create in %s: no team label: admission did not run", ns)
			}
			return d
		}
		const warmup = 20
		for i := range warmup {
			for _, p := range paths {
				create(p.ns, i)
			}
		}
		samples := make([][]time.Duration, len(paths))
		start := time.Now()
		for i := range n {
			for j, p := range paths {
				samples[j] = append(samples[j], create(p.ns, i))
			}
		}
		took := time.Since(start)
		var results []latency
		for j, p := range paths {
			results = append(results, summarize(p.name, samples[j]))
		}
		report := latencyReport(results, n, warmup, took)
		t.Log("\n" + report)
		if out == "" {
			return
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(filepath.Join(out, "latest.json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, "latest.md"), []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", filepath.Join(out, "latest.md"))
	})
}

// summarize is the median, 95th percentile and mean of samples.
func summarize(name string, samples []time.Duration) latency {
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return latency{Path: name, N: len(s), MedianMillis: ms(at(0.5)), P95Millis: ms(at(0.95)), MeanMillis: ms(sum / time.Duration(len(s)))}
}

// latencyReport is the Markdown table of make bench-admission.
func latencyReport(results []latency, n, warmup int, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### make bench-admission: a Logger create (server-side dry run), %d times on each path\n\n", n)
	fmt.Fprintf(&b, "Measured %s on %s/%s with %d cores; %d creates per path first as a warm-up; the measured creates took %s.\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), warmup, took.Round(time.Second))
	b.WriteString("| path | median | p95 | mean | median over no admission |\n|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %.2f ms | %.2f ms | %.2f ms | +%.2f ms |\n", r.Path, r.MedianMillis, r.P95Millis, r.MeanMillis, r.MedianMillis-results[0].MedianMillis)
	}
	b.WriteString("\nThe time is the client's: from the request's start to its answer, over loopback. The webhook adds two HTTPS calls (mutating, then validating) from the API server to the operator, each reading the namespace from the operator's cache; the policies run inside the API server.\n")
	return b.String()
}

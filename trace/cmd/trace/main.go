// Command trace follows one object through a stage's operator and prints its
// timeline; `make trace-N` runs it (labs/trace.sh). See package trace.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/operator-flow/operator-flow/trace"
)

func main() {
	stageID := flag.String("stage", "", "the stage whose operator runs (1 to 6), or a day-two module (A1, A2, A3)")
	obj := flag.String("obj", "logger/lab/audit", "the object: kind/namespace/name")
	kubeconfig := flag.String("kubeconfig", "", "the cluster's kubeconfig")
	root := flag.String("root", ".", "the repository's root")
	record := flag.String("record", "", "the operator's recording (APICOUNT_RECORD); empty: none")
	oplog := flag.String("log", "", "the operator's log; empty: none")
	out := flag.String("out", "", "write the Mermaid diagram to this file (Markdown)")
	del := flag.Bool("delete", false, "delete the object at the end, and trace that too")
	cascade := flag.String("cascade", "background", "with --delete: kubectl delete's --cascade (background, foreground or orphan)")
	flag.Parse()

	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	stage, ok := trace.StageID(*stageID)
	if !ok {
		fail(fmt.Errorf("--stage %q: stages are 1 to 6, day-two modules A1, A2, A3", *stageID))
	}
	o, err := trace.ParseObject(*obj)
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	manifest, err := trace.Manifest(ctx, filepath.Join(*root, "01-crd-yaml", "samples"), *kubeconfig, stage, o)
	if err != nil {
		fail(err)
	}
	audit, err := trace.AuditLog(*root, *kubeconfig)
	if err != nil {
		fail(err)
	}
	t := &trace.Tracer{Stage: stage, Object: o, Manifest: manifest, Kubeconfig: *kubeconfig,
		Kubectl: filepath.Join(*root, "bin", "kubectl"), Audit: audit, Delete: *del, Cascade: *cascade,
		Progress: func(s string) { fmt.Fprintln(os.Stderr, ">>", s) }}
	if *record != "" {
		t.Record = trace.File(*record)
	}
	if *oplog != "" {
		t.Log = trace.File(*oplog)
	}
	tl, err := t.Run(ctx)
	if err != nil {
		fail(err)
	}
	fmt.Println()
	tl.WriteText(os.Stdout)
	if *out != "" {
		md := fmt.Sprintf("# %s on stage %s\n\n```mermaid\n%s```\n", o, stage.Dir, tl.Mermaid())
		if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
			fail(err)
		}
		shown := *out
		if rel, err := filepath.Rel(*root, *out); err == nil {
			shown = rel
		}
		fmt.Fprintf(os.Stderr, "\n>> the same trace as a Mermaid sequence diagram: %s\n", shown)
	}
}

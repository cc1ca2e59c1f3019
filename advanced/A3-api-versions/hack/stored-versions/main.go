// Command stored-versions prints the version each Logger is stored in, read
// from the cluster's etcd, not through the API server, which converts every
// object to the version a client asks for and so cannot show it (`make
// stored-A3`). A custom resource is stored as JSON (CBOR only with the alpha
// CBORServingAndStorage feature gate); its apiVersion is the storage
// version when it was last written.
//
// Its output, after lab A3's upgrade and before the migration:
//
//	KEY                                             STORED AS
//	/registry/example.com/loggers/archive/audit     example.com/v1
//	/registry/example.com/loggers/archive/heartbeat example.com/v1
//	/registry/example.com/loggers/lab/audit         example.com/v2
//	/registry/example.com/loggers/lab/heartbeat     example.com/v2
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/operator-flow/operator-flow/harness/etcd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "the cluster's kubeconfig (cluster/cluster.sh kubeconfig)")
	namespace := flag.String("namespace", "", "only this namespace's Loggers (default: every namespace)")
	flag.Parse()
	prefix := "/registry/example.com/loggers/"
	if *namespace != "" {
		prefix += *namespace + "/"
	}
	kv, err := etcd.Read(context.Background(), *kubeconfig, prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	if len(kv) == 0 {
		fmt.Printf("no Logger is stored under %s\n", prefix)
		return
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 1, ' ', 0)
	_, _ = fmt.Fprintln(w, "KEY\tSTORED AS") // stdout: Flush reports a failure
	for _, k := range keys {
		var o struct {
			APIVersion string `json:"apiVersion"`
		}
		stored := "(not JSON)"
		if json.Unmarshal(kv[k], &o) == nil {
			stored = o.APIVersion
		}
		_, _ = fmt.Fprintf(w, "%s\t%s\n", k, stored)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

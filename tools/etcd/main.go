// Command etcd is the etcd server, built from the Go module proxy.
//
// etcd's own go.mod uses replace directives for its sibling modules, so
// `go install go.etcd.io/etcd/server/v3@v3.6.x` is refused. A module of our own
// that imports the server package and calls its entry point builds the same
// binary with plain `go build`.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}

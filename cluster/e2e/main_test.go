// Package e2e checks, on the cluster the suite runs on (kwok, or kind with
// CLUSTER=kind), two things the clusters that cluster/ configures must give
// the day-two modules: the StorageVersionMigration API, with which module A3
// rewrites the stored Loggers, and a view of what etcd holds
// (harness/etcd), which shows the version each object is stored in.
package e2e

import (
	"testing"

	"github.com/operator-flow/operator-flow/harness"
)

// The Logger CRD of stage 01: a custom resource to migrate and to find in
// etcd.
func TestMain(m *testing.M) { harness.Main(m, "01-crd-yaml/crds") }

func clients(t *testing.T) *harness.Clients {
	t.Helper()
	c, err := harness.NewClients(harness.Env().EnvConf().Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

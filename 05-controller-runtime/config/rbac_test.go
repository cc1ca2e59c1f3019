package config_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// TestRBACDoesNotGrow pins the generated permissions to what the code uses,
// verb by verb. A new +kubebuilder:rbac marker makes it fail on purpose:
// whoever adds a permission must also say here why the code needs it. The
// e2e test TestLeastPrivilege shows the other direction: with exactly these
// permissions, the operator does its whole job.
func TestRBACDoesNotGrow(t *testing.T) {
	want := map[string][]rbacv1.PolicyRule{
		"ClusterRole/operator-flow-05-manager": {
			// Create, repair and clean up Loggers' Deployments; the cache
			// lists and watches them (no get: reads come from the cache).
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create", "delete", "list", "patch", "watch"}},
			// The metrics endpoint asks the API server who a caller is and
			// whether they may read /metrics (the Metrics options in main.go).
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
			// Watch Loggers; update writes their status.
			{APIGroups: []string{"example.com"}, Resources: []string{"loggers"}, Verbs: []string{"list", "update", "watch"}},
			// Watch tickets; update writes the booking.
			{APIGroups: []string{"flights.com"}, Resources: []string{"flighttickets"}, Verbs: []string{"list", "update", "watch"}},
		},
		"Role/operator-flow-05-leader-election": {
			// The lock records a "became leader" Event on the Lease.
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			// Take, renew and release the Lease.
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create", "get", "update"}},
		},
	}
	got := map[string][]rbacv1.PolicyRule{}
	b, err := os.ReadFile("rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var r struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := dec.Decode(&r); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if r.Kind != "" {
			got[r.Kind+"/"+r.Metadata.Name] = r.Rules
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("config/rbac/role.yaml grants\n  %v\nwant exactly\n  %v", got, want)
	}
}

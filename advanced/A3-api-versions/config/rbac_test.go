package config_test

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// TestRBACDoesNotGrow pins the generated permissions to what the code uses,
// verb by verb. A new +kubebuilder:rbac marker makes it fail on purpose:
// whoever adds a permission must also say here why the code needs it. Stage
// 06's e2e test TestLeastPrivilege shows the other direction for the code
// A2 shares with it.
func TestRBACDoesNotGrow(t *testing.T) {
	want := map[string][]rbacv1.PolicyRule{
		"ClusterRole/operator-flow-a3-manager": {
			// Module A2: the webhooks read the Logger's namespace for its
			// labels, through the cache (internal/webhook). A policy's
			// namespaceObject needs no such grant.
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
			// Create and repair Loggers' Deployments; the cache lists and
			// watches them. get: a create refused as AlreadyExists is
			// followed by a read past the cache. No delete: the garbage
			// collector deletes them.
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create", "get", "list", "patch", "watch"}},
			// The metrics endpoint asks the API server who a caller is and
			// whether they may read /metrics (the Metrics options in main.go).
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
			// Booked, Created, Updated, Deleted, Failed.
			{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			// Watch Loggers; nothing writes to a Logger but its status. get:
			// before creating a Deployment, the Logger is read past the
			// cache.
			{APIGroups: []string{"example.com"}, Resources: []string{"loggers"}, Verbs: []string{"get", "list", "watch"}},
			// blockOwnerDeletion in the Deployment's owner reference, where
			// OwnerReferencesPermissionEnforcement is enabled.
			{APIGroups: []string{"example.com"}, Resources: []string{"loggers/finalizers"}, Verbs: []string{"update"}},
			// The conditions, through the status subresource.
			{APIGroups: []string{"example.com"}, Resources: []string{"loggers/status"}, Verbs: []string{"patch"}},
			// Watch tickets; patch adds and removes the finalizer.
			{APIGroups: []string{"flights.com"}, Resources: []string{"flighttickets"}, Verbs: []string{"list", "patch", "watch"}},
			// The booking, through the status subresource.
			{APIGroups: []string{"flights.com"}, Resources: []string{"flighttickets/status"}, Verbs: []string{"patch"}},
		},
		"Role/operator-flow-a3-leader-election": {
			// The lock records a "became leader" Event on the Lease.
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
			// Take, renew and release the Lease.
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create", "get", "update"}},
		},
		"Role/operator-flow-a3-ledger": {
			// Seat holds: the cache lists and watches them; create, patch,
			// delete; get after a create refused as AlreadyExists.
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "delete", "get", "list", "patch", "watch"}},
		},
	}
	if got := readRules(t, "rbac/role.yaml"); !reflect.DeepEqual(got, want) {
		t.Errorf("config/rbac/role.yaml grants\n  %v\nwant exactly\n  %v", got, want)
	}
}

// TestUserRoles pins the editor and viewer roles: an editor may do anything
// to the objects and only read their status, so that only the operator
// writes status; a viewer only reads.
func TestUserRoles(t *testing.T) {
	for _, k := range []struct{ kind, plural, group string }{
		{"flightticket", "flighttickets", "flights.com"},
		{"logger", "loggers", "example.com"},
	} {
		editor := "ClusterRole/operator-flow-a3-" + k.kind + "-editor"
		viewer := "ClusterRole/operator-flow-a3-" + k.kind + "-viewer"
		want := map[string][]rbacv1.PolicyRule{
			editor: {
				{APIGroups: []string{k.group}, Resources: []string{k.plural}, Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
				{APIGroups: []string{k.group}, Resources: []string{k.plural + "/status"}, Verbs: []string{"get"}},
			},
			viewer: {
				{APIGroups: []string{k.group}, Resources: []string{k.plural, k.plural + "/status"}, Verbs: []string{"get", "list", "watch"}},
			},
		}
		got := readRules(t, "rbac/"+k.kind+"_editor_role.yaml")
		maps.Copy(got, readRules(t, "rbac/"+k.kind+"_viewer_role.yaml"))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("the %s roles grant\n  %v\nwant exactly\n  %v", k.kind, got, want)
		}
	}
}

// readRules reads the roles in a YAML file: kind/name to rules.
func readRules(t *testing.T, path string) map[string][]rbacv1.PolicyRule {
	t.Helper()
	got := map[string][]rbacv1.PolicyRule{}
	b, err := os.ReadFile(path)
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
			return got
		} else if err != nil {
			t.Fatal(err)
		}
		if r.Kind != "" {
			got[r.Kind+"/"+r.Metadata.Name] = r.Rules
		}
	}
}

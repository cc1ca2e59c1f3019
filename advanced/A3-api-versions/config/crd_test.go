// Package config_test checks that the CRDs controller-gen writes from the Go
// types say exactly what 01's hand-written CRDs say, plus stage 06's
// additions (the status subresource, status.conditions,
// status.observedGeneration at least 1, and the Ready column) and module
// A3's (the Logger's v2, stored, v1 deprecated, and the conversion webhook),
// and nothing else.
package config_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The pairs to compare: 01's file and the generated one.
var crdPairs = []struct{ handWritten, generated string }{
	{"../../../01-crd-yaml/crds/flighttickets.flights.com.yaml", "crd/flights.com_flighttickets.yaml"},
	{"../../../01-crd-yaml/crds/loggers.example.com.yaml", "crd/example.com_loggers.yaml"},
}

func TestGeneratedCRDsMatchStage01(t *testing.T) {
	for _, p := range crdPairs {
		t.Run(filepath.Base(p.generated), func(t *testing.T) {
			want := comparable(t, readCRD(t, p.handWritten))
			got := comparable(t, withoutStage06Additions(t, withoutA3Additions(t, readCRD(t, p.generated))))
			if diffs := diff("", want, got); len(diffs) > 0 {
				t.Errorf("%s differs from %s (descriptions ignored):\n  %s\nFix the Go types or markers, then run: make manifests-A3",
					p.generated, p.handWritten, strings.Join(diffs, "\n  "))
			}
		})
	}
}

// TestComparisonSeesDifferences makes sure the comparison above is not
// vacuous: a changed bound, a lost CEL rule, a renamed column and a missing
// short name must each be reported.
func TestComparisonSeesDifferences(t *testing.T) {
	base := readCRD(t, crdPairs[0].generated)
	schema := func(c *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
		return c.Spec.Versions[0].Schema.OpenAPIV3Schema
	}
	mutations := map[string]func(c *apiextensionsv1.CustomResourceDefinition){
		"bound": func(c *apiextensionsv1.CustomResourceDefinition) {
			spec := schema(c).Properties["spec"]
			n := spec.Properties["number"]
			n.Maximum = ptr(11.0)
			spec.Properties["number"] = n
			schema(c).Properties["spec"] = spec
		},
		"CEL rule": func(c *apiextensionsv1.CustomResourceDefinition) {
			spec := schema(c).Properties["spec"]
			spec.XValidations = nil
			schema(c).Properties["spec"] = spec
		},
		"column": func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].AdditionalPrinterColumns[0].Name = "Origin"
		},
		"short name": func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Names.ShortNames = nil
		},
	}
	for name, mutate := range mutations {
		changed := base.DeepCopy()
		mutate(changed)
		if d := diff("", comparable(t, base), comparable(t, changed)); len(d) == 0 {
			t.Errorf("changing the %s went unnoticed", name)
		}
	}
}

// withoutA3Additions checks that the Logger CRD has what module A3 adds, and
// returns it without: v2 is v1 with spec.interval, a duration, where v1 has
// spec.timeInterval, and the version stored; v1 is served, deprecated; the
// operator's webhook converts. Other CRDs come back as they are.
func withoutA3Additions(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	if crd.Spec.Names.Kind != "Logger" {
		return crd
	}
	crd = crd.DeepCopy()
	if c := crd.Spec.Conversion; c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil ||
		c.Webhook.ClientConfig == nil || c.Webhook.ClientConfig.Service == nil || ptrValue(c.Webhook.ClientConfig.Service.Path) != "/convert" {
		t.Errorf("%s: conversion is %+v, want strategy Webhook, path /convert", crd.Name, c)
	}
	crd.Spec.Conversion = nil
	if len(crd.Spec.Versions) != 2 || crd.Spec.Versions[0].Name != "v1" || crd.Spec.Versions[1].Name != "v2" {
		t.Fatalf("%s: versions %d, want v1 and v2", crd.Name, len(crd.Spec.Versions))
	}
	v1, v2 := &crd.Spec.Versions[0], crd.Spec.Versions[1]
	if v1.Storage || !v2.Storage || !v1.Served || !v2.Served || !v1.Deprecated || v1.DeprecationWarning == nil || v2.Deprecated {
		t.Errorf("%s: want v1 served, deprecated, not stored; v2 served and stored", crd.Name)
	}
	v1.Storage, v1.Deprecated, v1.DeprecationWarning = true, false, nil

	// v2, with spec.interval in place of spec.timeInterval and its column,
	// is v1.
	spec := v2.Schema.OpenAPIV3Schema.Properties["spec"]
	in := spec.Properties["interval"]
	if in.Format != "duration" || len(in.XValidations) != 1 || !strings.Contains(in.XValidations[0].Rule, "duration('100ms')") {
		t.Errorf("%s: v2 spec.interval is %+v, want format duration and a CEL rule on its bounds", crd.Name, in)
	}
	delete(spec.Properties, "interval")
	spec.Properties["timeInterval"] = v1.Schema.OpenAPIV3Schema.Properties["spec"].Properties["timeInterval"]
	spec.Required = []string{"name", "timeInterval"}
	v2.Schema.OpenAPIV3Schema.Properties["spec"] = spec
	for i, c := range v2.AdditionalPrinterColumns {
		if c.Name == "Interval" {
			v2.AdditionalPrinterColumns[i] = v1.AdditionalPrinterColumns[i]
		}
	}
	v2.Name, v2.Storage = "v1", true
	if d := diff("", comparable(t, &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{*v1}}}),
		comparable(t, &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{v2}}})); len(d) > 0 {
		t.Errorf("%s: v2 differs from v1 in more than spec.interval:\n  %s", crd.Name, strings.Join(d, "\n  "))
	}
	crd.Spec.Versions = crd.Spec.Versions[:1]
	return crd
}

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// withoutStage06Additions checks that the CRD has what stage 06 adds to
// 01's, and returns it without them.
func withoutStage06Additions(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd = crd.DeepCopy()
	v := &crd.Spec.Versions[0]
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Errorf("%s has no status subresource", crd.Name)
	} else {
		v.Subresources.Status = nil
	}

	status := v.Schema.OpenAPIV3Schema.Properties["status"]
	if og, ok := status.Properties["observedGeneration"]; !ok {
		t.Errorf("%s: status has no observedGeneration", crd.Name)
	} else if og.Minimum == nil || *og.Minimum != 1 {
		// Generations start at 1; 0 would be "not observed", which is
		// the field left out.
		t.Errorf("%s: status.observedGeneration has minimum %v, want 1", crd.Name, og.Minimum)
	}
	conds, ok := status.Properties["conditions"]
	if !ok || conds.XListType == nil || *conds.XListType != "map" || !reflect.DeepEqual(conds.XListMapKeys, []string{"type"}) {
		t.Errorf("%s: status.conditions is missing or not a list map keyed by type: %+v", crd.Name, conds)
	}
	delete(status.Properties, "observedGeneration")
	delete(status.Properties, "conditions")
	v.Schema.OpenAPIV3Schema.Properties["status"] = status

	cols := v.AdditionalPrinterColumns[:0]
	ready := false
	for _, c := range v.AdditionalPrinterColumns {
		if c.Name == "Ready" && strings.HasPrefix(c.JSONPath, ".status.conditions[?(@.type==") {
			ready = true
			continue
		}
		cols = append(cols, c)
	}
	if !ready {
		t.Errorf("%s has no Ready column showing a condition", crd.Name)
	}
	v.AdditionalPrinterColumns = cols
	return crd
}

func readCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(b, &crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &crd
}

// comparable keeps what the API server acts on (names, scope, versions with
// their schema, printer columns and subresources) and drops what it does not:
// descriptions, which are prose and are worded differently on purpose, the
// annotations controller-gen adds, and the order of `required` (a set;
// controller-gen sorts it). The result is plain JSON data, so that
// diff can name the path of any difference.
func comparable(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) map[string]any {
	t.Helper()
	spec := crd.Spec.DeepCopy()
	for i := range spec.Versions {
		v := &spec.Versions[i]
		if v.Schema != nil {
			normalize(v.Schema.OpenAPIV3Schema)
		}
		for j := range v.AdditionalPrinterColumns {
			v.AdditionalPrinterColumns[j].Description = ""
		}
		// controller-gen writes `subresources: {}` when there are none;
		// 01 leaves the field out. Both mean "no subresources".
		if s := v.Subresources; s != nil && s.Status == nil && s.Scale == nil {
			v.Subresources = nil
		}
	}
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func normalize(s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	s.Description = ""
	sort.Strings(s.Required)
	for k, p := range s.Properties {
		normalize(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		normalize(s.Items.Schema)
		for i := range s.Items.JSONSchemas {
			normalize(&s.Items.JSONSchemas[i])
		}
	}
	if s.AdditionalProperties != nil {
		normalize(s.AdditionalProperties.Schema)
	}
}

// diff lists every path at which want and got differ, e.g.
// `versions[0].schema.openAPIV3Schema.properties.spec.properties.number.maximum: want 10, got 11`.
func diff(path string, want, got any) []string {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		keys := map[string]bool{}
		for k := range wm {
			keys[k] = true
		}
		for k := range gm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		var out []string
		for _, k := range sorted {
			out = append(out, diff(join(path, k), wm[k], gm[k])...)
		}
		return out
	}
	ws, wok := want.([]any)
	gs, gok := got.([]any)
	if wok && gok && len(ws) == len(gs) {
		var out []string
		for i := range ws {
			out = append(out, diff(fmt.Sprintf("%s[%d]", path, i), ws[i], gs[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(want, got) {
		return []string{fmt.Sprintf("%s: 01 says %s, generated says %s", path, show(want), show(got))}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func show(v any) string {
	if v == nil {
		return "(nothing)"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func ptr[T any](v T) *T { return &v }

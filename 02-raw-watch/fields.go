package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Readers of unstructured fields. unstructured.NestedString and friends
// already refuse a value of the wrong type; these also refuse an absent one,
// and name the field in both cases.

func requiredString(u *unstructured.Unstructured, path ...string) (string, error) {
	v, found, err := unstructured.NestedString(u.Object, path...)
	if err != nil {
		return "", fmt.Errorf("bad field: %w", err)
	}
	if !found {
		return "", fmt.Errorf("bad field: .%s is missing", strings.Join(path, "."))
	}
	return v, nil
}

func requiredInt(u *unstructured.Unstructured, path ...string) (int64, error) {
	v, found, err := unstructured.NestedInt64(u.Object, path...)
	if err != nil {
		return 0, fmt.Errorf("bad field: %w", err)
	}
	if !found {
		return 0, fmt.Errorf("bad field: .%s is missing", strings.Join(path, "."))
	}
	return v, nil
}

// optionalInt returns def when the field is absent.
func optionalInt(u *unstructured.Unstructured, def int64, path ...string) (int64, error) {
	v, found, err := unstructured.NestedInt64(u.Object, path...)
	if err != nil {
		return 0, fmt.Errorf("bad field: %w", err)
	}
	if !found {
		return def, nil
	}
	return v, nil
}

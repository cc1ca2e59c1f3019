// Package v1 holds the Go types of the example.com/v1 API: the Logger kind
// that 01-crd-yaml/crds defines. See ../../flights/v1 for how they are used.
//
// +k8s:deepcopy-gen=package
// +groupName=example.com
package v1

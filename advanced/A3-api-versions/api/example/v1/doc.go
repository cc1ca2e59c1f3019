// Package v1 holds the Go types of the example.com/v1 API: the Logger kind
// that 01-crd-yaml/crds defines. In this module v1 is a spoke: still served,
// deprecated, and converted to and from v2, the hub
// (logger_conversion.go). controller-gen writes the CRD (config/crd/) and
// the deepcopy functions from these types and their markers
// (hack/generate.sh).
//
// +kubebuilder:object:generate=true
// +groupName=example.com
package v1

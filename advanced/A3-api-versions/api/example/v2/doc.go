// Package v2 holds the Go types of the example.com/v2 API: the Logger kind
// with its interval as a duration ("5s", "1m30s", "500ms") where v1 has a
// number of seconds. v2 is the hub: the version the operator works in and
// the one the API server stores (+kubebuilder:storageversion); v1
// converts to and from it (../v1/logger_conversion.go). controller-gen
// writes the CRD, with both versions, and the deepcopy functions from these
// types and their markers (hack/generate.sh).
//
// +kubebuilder:object:generate=true
// +groupName=example.com
package v2

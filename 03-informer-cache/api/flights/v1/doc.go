// Package v1 holds the Go types of the flights.com/v1 API: the FlightTicket
// kind that 01-crd-yaml/crds defines. They are written by hand to match that
// CRD's schema; deepcopy functions, the clientset, listers and informers are
// generated from them (hack/update-codegen.sh).
//
// +k8s:deepcopy-gen=package
// +groupName=flights.com
package v1

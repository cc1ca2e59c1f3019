// Package v1 holds the Go types of the flights.com/v1 API: the FlightTicket
// kind that 01-crd-yaml/crds defines. controller-gen writes the CRD
// (config/crd/) and the deepcopy functions from them and their markers
// (hack/generate.sh).
//
// +kubebuilder:object:generate=true
// +groupName=flights.com
package v1

// Package v1 holds the Go types of flights.com/v1. controller-gen reads the
// kubebuilder markers in this package to write the CRD
// (config/crd/flights.com_flighttickets.yaml) and the DeepCopy functions
// (zz_generated.deepcopy.go); nothing here is written by hand twice.
//
// +kubebuilder:object:generate=true
// +groupName=flights.com
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: "flights.com", Version: "v1"}

var (
	// SchemeBuilder collects the functions that add this package's types to a
	// runtime.Scheme; main calls AddToScheme once, before the Manager starts.
	SchemeBuilder = runtime.NewSchemeBuilder(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &FlightTicket{}, &FlightTicketList{})
		// The options types (ListOptions, GetOptions, ...) and WatchEvent
		// in this group version: without them no client can list or watch it.
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})
	AddToScheme = SchemeBuilder.AddToScheme
)

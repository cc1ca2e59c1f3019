package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is the group and version of these types, as in their
// URLs: /apis/flights.com/v1/...
var SchemeGroupVersion = schema.GroupVersion{Group: "flights.com", Version: "v1"}

var (
	// SchemeBuilder collects the functions that add these types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme teaches a scheme these types, so that it can decode the
	// JSON the API server sends into them.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &FlightTicket{}, &FlightTicketList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

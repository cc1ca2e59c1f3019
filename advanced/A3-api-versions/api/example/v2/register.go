package v2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SchemeGroupVersion is the group and version of these types, as in their
// URLs: /apis/example.com/v2/...
var SchemeGroupVersion = schema.GroupVersion{Group: "example.com", Version: "v2"}

var (
	// SchemeBuilder collects the functions that add these types to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme teaches a scheme these types, so that it can decode the
	// JSON the API server sends into them.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &Logger{}, &LoggerList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

package trace

import (
	"fmt"
	"strings"
)

// Object is what a trace follows: a resource (plural, as in a URL), a
// namespace and a name.
type Object struct {
	Resource, Namespace, Name string
}

func (o Object) String() string { return o.Resource + "/" + o.Namespace + "/" + o.Name }

// resourceNames maps what a learner may type to the resource's plural.
var resourceNames = map[string]string{
	"logger": "loggers", "loggers": "loggers",
	"ft": "flighttickets", "flightticket": "flighttickets", "flighttickets": "flighttickets",
}

// ParseObject reads OBJ=kind/namespace/name ("logger/lab/audit",
// "ft/lab/paris-rome").
func ParseObject(s string) (Object, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Object{}, fmt.Errorf("OBJ=%q: want kind/namespace/name, e.g. OBJ=logger/lab/audit or OBJ=ft/lab/paris-rome", s)
	}
	res, ok := resourceNames[strings.ToLower(parts[0])]
	if !ok {
		return Object{}, fmt.Errorf("OBJ=%q: the course's kinds are logger and ft (flightticket)", s)
	}
	return Object{Resource: res, Namespace: parts[1], Name: parts[2]}, nil
}

// IsLogger reports whether the object is a Logger, whose life includes a
// Deployment, its ReplicaSet and its pods.
func (o Object) IsLogger() bool { return o.Resource == "loggers" }

// Deployment is the name of a Logger's Deployment.
func (o Object) Deployment() string { return "logger-" + o.Name }

// Related reports whether a request or event on (resource, namespace, name)
// belongs to the object's life: the object itself (and its subresources), a
// Logger's Deployment, ReplicaSets and pods, the Events about any of them, and
// stage 06's seat hold of a ticket (a ConfigMap "<namespace>.<name>" in the
// ledger's namespace).
func (o Object) Related(resource, namespace, name string) bool {
	res := strings.SplitN(resource, "/", 2)[0]
	d := o.Deployment()
	switch res {
	case o.Resource:
		return namespace == o.Namespace && name == o.Name
	case "events":
		return namespace == o.Namespace && (strings.HasPrefix(name, o.Name+".") ||
			o.IsLogger() && strings.HasPrefix(name, d))
	case "deployments", "replicasets", "pods":
		return o.IsLogger() && namespace == o.Namespace && (name == d || strings.HasPrefix(name, d+"-"))
	case "configmaps":
		return o.Resource == "flighttickets" && name == o.Namespace+"."+o.Name
	}
	return false
}

// Watched reports whether an operator's LIST or WATCH of resource belongs in
// the object's trace: its own kind, or a Logger's Deployments.
func (o Object) Watched(resource string) bool {
	return resource == o.Resource || o.IsLogger() && resource == "deployments"
}

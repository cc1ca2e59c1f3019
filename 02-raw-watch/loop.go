package main

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// operator holds the clients and settings the handlers need. It keeps no
// copy of any object: whatever a handler needs to know, it asks the API
// server for (see README: a GET per event).
type operator struct {
	dyn          dynamic.Interface    // FlightTickets and Loggers, as unstructured JSON
	kube         kubernetes.Interface // Deployments, with Go types from k8s.io/api
	namespace    string               // "" watches every namespace
	image        string
	watchTimeout time.Duration
}

// run is the whole operator: one watch per resource, and one loop that takes
// whichever event arrives first and handles it to the end before it takes
// the next. It returns when ctx ends.
func (o *operator) run(ctx context.Context) {
	tickets, loggers, deployments := o.ticketStream(), o.loggerStream(), o.deploymentStream()
	for _, s := range []*stream{tickets, loggers, deployments} {
		s.connect(ctx)
		defer s.stop()
	}
	for {
		var (
			s    *stream
			ev   watch.Event
			open bool
		)
		select {
		case <-ctx.Done():
			return
		case ev, open = <-tickets.events():
			s = tickets
		case ev, open = <-loggers.events():
			s = loggers
		case ev, open = <-deployments.events():
			s = deployments
		}
		s.receive(ctx, ev, open)
	}
}

func (o *operator) ticketStream() *stream {
	r := o.dyn.Resource(ticketsGVR).Namespace(o.namespace)
	return &stream{
		resource: "flighttickets",
		list:     func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, opts) },
		watch:    r.Watch,
		handle:   o.handleTicket,
		timeout:  o.watchTimeout,
	}
}

func (o *operator) loggerStream() *stream {
	r := o.dyn.Resource(loggersGVR).Namespace(o.namespace)
	return &stream{
		resource: "loggers",
		list:     func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) { return r.List(ctx, opts) },
		watch:    r.Watch,
		handle:   o.handleLogger,
		timeout:  o.watchTimeout,
	}
}

// deploymentStream watches only the Deployments this operator made, by
// their label, not every Deployment in the cluster.
func (o *operator) deploymentStream() *stream {
	r := o.kube.AppsV1().Deployments(o.namespace)
	return &stream{
		resource: "deployments",
		list: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = managedBySelector
			return r.List(ctx, opts)
		},
		watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = managedBySelector
			return r.Watch(ctx, opts)
		},
		handle:  o.handleDeployment,
		timeout: o.watchTimeout,
	}
}

package main

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func ticketObject(spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "flights.com/v1", "kind": "FlightTicket",
		"metadata": map[string]any{"name": "t", "namespace": "ns"},
		"spec":     spec,
	}}
}

func TestBookingMessage(t *testing.T) {
	got := bookingMessage(ticketSpec{From: "Amsterdam", To: "Lisbon", Number: 2})
	if want := "Booked 2 seat(s) from Amsterdam to Lisbon"; got != want {
		t.Errorf("bookingMessage = %q, want %q", got, want)
	}
}

func TestParseTicket(t *testing.T) {
	got, err := parseTicket(ticketObject(map[string]any{"from": "Oslo", "to": "Bergen", "number": int64(3)}))
	if err != nil || got != (ticketSpec{From: "Oslo", To: "Bergen", Number: 3}) {
		t.Fatalf("parseTicket = %+v, %v", got, err)
	}
}

// A field of the wrong type is an error that names the field: the operator
// logs it with the object's key and goes on with other objects.
func TestParseTicketRejectsWrongTypes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  map[string]any
		field string
	}{
		{"number is a string", map[string]any{"from": "Oslo", "to": "Bergen", "number": "two"}, ".spec.number"},
		{"number is a fraction", map[string]any{"from": "Oslo", "to": "Bergen", "number": 2.5}, ".spec.number"},
		{"from is a number", map[string]any{"from": int64(7), "to": "Bergen", "number": int64(1)}, ".spec.from"},
		{"to is missing", map[string]any{"from": "Oslo", "number": int64(1)}, ".spec.to"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseTicket(ticketObject(tc.spec))
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("parseTicket error = %v, want one naming %s", err, tc.field)
			}
		})
	}
}

package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flightsv1 "github.com/operator-flow/operator-flow/06-status-and-owners/api/flights/v1"
)

// The seat ledger is the side effect of booking that owner references cannot
// clean up. Booking a ticket holds its seats in a ConfigMap, a "seat hold",
// in the ledger namespace, which is usually not the ticket's. An owner
// reference cannot point across namespaces (the garbage collector would look
// for the owner in the hold's namespace, find nothing, and delete the hold),
// so the ticket carries a finalizer instead, and the operator deletes the
// hold before it lets the ticket go.
//
// The operator treats the ledger as a booking system outside Kubernetes: it
// writes and never reads it, so every write is idempotent. Hold is a
// server-side apply, which creates the hold or brings it to the current
// spec in one request; Release deletes it by name (NotFound: already
// released). Each ticket has a hold of its own, so bookings never conflict.
// The permissions are a Role in the ledger namespace: no reads.
//
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=create;patch;delete,namespace=operator-flow-system,roleName=operator-flow-06-ledger

// The labels of a seat hold, so that people can list the ledger:
// kubectl -n <ledger namespace> get configmaps -l app.kubernetes.io/component=seat-hold
const (
	componentLabel = "app.kubernetes.io/component"
	seatHold       = "seat-hold"
	// fieldOwner names the operator in the holds' managedFields.
	fieldOwner = "operator-flow-06"
)

// SeatLedger holds and releases seats in one namespace.
type SeatLedger struct {
	Client    client.Client // writes only: a read would start an informer on ConfigMaps
	Namespace string
}

// Hold records that the ticket holds spec.number seats from spec.from to
// spec.to.
func (l *SeatLedger) Hold(ctx context.Context, t *flightsv1.FlightTicket) error {
	return l.Client.Apply(ctx, seatHoldFor(t, l.Namespace), client.FieldOwner(fieldOwner), client.ForceOwnership)
}

// Release gives the ticket's seats back by deleting its hold.
func (l *SeatLedger) Release(ctx context.Context, t *flightsv1.FlightTicket) error {
	hold := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: l.Namespace, Name: holdName(t)}}
	return client.IgnoreNotFound(l.Client.Delete(ctx, hold))
}

// seatHoldFor is the hold of a ticket, as an apply configuration: the fields
// the operator owns, nothing else.
func seatHoldFor(t *flightsv1.FlightTicket, namespace string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(holdName(t), namespace).
		WithLabels(map[string]string{managedByLabel: managedBy, componentLabel: seatHold}).
		WithData(map[string]string{
			"ticket": t.Namespace + "/" + t.Name,
			"from":   t.Spec.From,
			"to":     t.Spec.To,
			"seats":  strconv.Itoa(int(t.Spec.Number)),
		})
}

// holdName is "<ticket namespace>.<ticket name>". Namespace names contain no
// dots, so no two tickets share a hold. A ticket name may be 253 characters
// long, and so may the hold's; the rare name that would be longer is cut
// and given a hash of the whole, to stay unique.
func holdName(t *flightsv1.FlightTicket) string {
	name := t.Namespace + "." + t.Name
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:])[:12]
	// A DNS label ends with a letter or digit, never with "." or "-".
	return strings.TrimRight(name[:validation.DNS1123SubdomainMaxLength-len(suffix)], ".-") + suffix
}

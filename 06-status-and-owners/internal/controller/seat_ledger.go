package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

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
// The operator watches the holds as it watches a Logger's Deployment: the
// Manager's cache holds every seat hold of the ledger namespace, and an
// event on a hold reconciles the ticket it names (ticketOfHold). So the
// ledger heals as the Deployments do: a hold deleted by hand, or with the
// whole ledger namespace, is made again for its booked ticket, and a hold
// whose ticket is gone (its finalizer stripped, or a write of a process
// that died landing late) is deleted.
//
// A write never lands on a ConfigMap by name alone: a hold is made with a
// create, which the API server refuses when the name is taken; a hold is
// changed with a patch that carries the resourceVersion read, and deleted
// with its UID and resourceVersion as preconditions: only if it is still
// the object read, unchanged. A ConfigMap that is not a seat hold is never
// changed or deleted.
//
// The permissions are a Role in the ledger namespace. get: on a create
// refused as AlreadyExists, the one read that goes to the API server (see
// Hold).
//
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete,namespace=operator-flow-system,roleName=operator-flow-06-ledger

// The labels of a seat hold, so that people can list the ledger:
// kubectl -n <ledger namespace> get configmaps -l app.kubernetes.io/component=seat-hold
const (
	componentLabel = "app.kubernetes.io/component"
	seatHold       = "seat-hold"
	// seatHoldSelector picks the ConfigMaps the cache holds: seat holds
	// this operator made.
	seatHoldSelector = componentLabel + "=" + seatHold + "," + managedBySelector
	// ticketKey is the data key that names a hold's ticket, namespace/name.
	ticketKey = "ticket"
)

// SeatLedger holds and releases seats in one namespace.
type SeatLedger struct {
	Client client.Client // reads from the cache, which holds only seat holds
	// Reader reads from the API server, past the cache (mgr.GetAPIReader()).
	Reader    client.Reader
	Namespace string
}

// Hold makes the ticket's seat hold say what its spec asks: it creates the
// hold, or patches the one there, or, when the hold is right, writes
// nothing. It reports whether it wrote.
func (l *SeatLedger) Hold(ctx context.Context, ticket *flightsv1.FlightTicket) (bool, error) {
	t := client.ObjectKeyFromObject(ticket)
	want := seatHoldFor(ticket, l.Namespace)
	var have corev1.ConfigMap
	err := l.Client.Get(ctx, client.ObjectKeyFromObject(want), &have)
	switch {
	case apierrors.IsNotFound(err):
		err = l.Client.Create(ctx, want)
		if !apierrors.IsAlreadyExists(err) {
			return err == nil, err
		}
		// The cache has no hold by that name, yet the API server has a
		// ConfigMap there: our hold, made a moment ago, whose event has not
		// reached the cache, or a ConfigMap that is not ours. Only the API
		// server can tell.
		if err := l.Reader.Get(ctx, client.ObjectKeyFromObject(want), &have); err != nil {
			return false, err
		}
		if !isHoldOf(&have, t) {
			return false, fmt.Errorf("the ConfigMap %s/%s is not a seat hold of this ticket (it lacks the labels %s or the data %s=%s); not touching it",
				have.Namespace, have.Name, seatHoldSelector, ticketKey, t)
		}
	case err != nil:
		return false, err
	case !isHoldOf(&have, t):
		// Another ticket's hold by this name: holdName makes that all but
		// impossible, and the hold is not ours to change.
		return false, fmt.Errorf("the seat hold %s/%s belongs to ticket %s; not touching it", have.Namespace, have.Name, have.Data[ticketKey])
	}
	if maps.Equal(have.Data, want.Data) {
		return false, nil
	}
	// A merge patch with the resourceVersion read: it changes the hold that
	// was read, or fails with 409 Conflict and is retried.
	patch := client.MergeFromWithOptions(have.DeepCopy(), client.MergeFromWithOptimisticLock{})
	have.Data = want.Data
	return true, l.Client.Patch(ctx, &have, patch)
}

// Release gives the ticket's seats back: it deletes the ticket's hold, the
// one in the cache, with its UID and resourceVersion as preconditions (409
// Conflict if it changed since: the retry reads it again). A hold the cache does
// not hold yet (made a moment ago) is deleted when its event arrives,
// because its ticket is gone by then. It reports whether it deleted.
func (l *SeatLedger) Release(ctx context.Context, t types.NamespacedName) (bool, error) {
	var have corev1.ConfigMap
	err := l.Client.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: holdName(t)}, &have)
	if apierrors.IsNotFound(err) || (err == nil && !isHoldOf(&have, t)) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	err = l.Client.Delete(ctx, &have, client.Preconditions{UID: &have.UID, ResourceVersion: &have.ResourceVersion})
	return err == nil, client.IgnoreNotFound(err)
}

// ticketOfHold maps an event on a seat hold to its ticket: the handler of the
// controller's watch on holds (SetupWithManager). A hold of a ticket outside
// r.Namespace maps to nothing: a ledger namespace can be shared with an
// operator that watches another namespace, and the cache cannot serve that
// ticket (its Get fails, not NotFound), so every retry would fail.
func (r *FlightTicketReconciler) ticketOfHold(_ context.Context, o client.Object) []reconcile.Request {
	cm, ok := o.(*corev1.ConfigMap)
	if !ok {
		return nil
	}
	namespace, name, ok := strings.Cut(cm.Data[ticketKey], "/")
	if !ok || r.Namespace != "" && namespace != r.Namespace {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}}
}

// seatHoldFor is the hold of ticket t: its labels and data, nothing else.
func seatHoldFor(t *flightsv1.FlightTicket, namespace string) *corev1.ConfigMap {
	key := client.ObjectKeyFromObject(t)
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			Name:      holdName(key),
			Labels:    map[string]string{managedByLabel: managedBy, componentLabel: seatHold},
		},
		Data: map[string]string{
			ticketKey: key.String(),
			"from":    t.Spec.From,
			"to":      t.Spec.To,
			"seats":   strconv.Itoa(int(t.Spec.Number)),
		},
	}
}

// isHoldOf reports whether cm is the seat hold of ticket t.
func isHoldOf(cm *corev1.ConfigMap, t types.NamespacedName) bool {
	selector, _ := labels.Parse(seatHoldSelector) // a constant that parses
	return selector.Matches(labels.Set(cm.Labels)) && cm.Data[ticketKey] == t.String()
}

// holdName is "<ticket namespace>.<ticket name>". Namespace names contain no
// dots, so no two tickets share a hold. A ticket name may be 253 characters
// long, and so may the hold's; the rare name that would be longer is cut
// and given a hash of the whole, to stay unique.
func holdName(t types.NamespacedName) string {
	name := t.Namespace + "." + t.Name
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "-" + hex.EncodeToString(sum[:])[:12]
	// A DNS label ends with a letter or digit, never with "." or "-".
	return strings.TrimRight(name[:validation.DNS1123SubdomainMaxLength-len(suffix)], ".-") + suffix
}

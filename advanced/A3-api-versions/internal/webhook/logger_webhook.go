// Package webhook is what module A2 adds to stage 06: the admission rule of
// harness/admission (a namespace's replicas cap, its team label), served by
// the operator itself as a defaulting and a validating webhook through
// controller-runtime's webhook server. In module A3 the webhooks take v2
// Loggers, the operator's version; conversion.go logs the conversion
// requests the same server answers.
package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	examplev1 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v1"
	examplev2 "github.com/operator-flow/operator-flow/advanced/A3-api-versions/api/example/v2"
)

// The labels the rule reads and writes (harness/admission names them too).
const (
	// MaxReplicasLabel, on a Namespace, caps its Loggers' spec.replicas.
	MaxReplicasLabel = "example.com/max-logger-replicas"
	// TeamLabel, on a Namespace, is copied to its Loggers that have none.
	TeamLabel = "example.com/team"
)

// The webhooks, for controller-gen: config/webhook/manifests.yaml. Both
// match loggers, not loggers/status: the operator's own status writes go to
// the status subresource and never reach this code. sideEffects=None lets
// a server-side dry run call them. failurePolicy=fail: while nobody answers,
// the API server refuses every create and update of a Logger (README.md
// says when Ignore is the better choice). timeoutSeconds=5, not the API
// server's default of 10: an operator that hangs (stopped, not gone, so
// the connection is accepted and nothing answers) holds each Logger write
// for up to 5 s per webhook before it is refused. versions=v2 with the
// default matchPolicy, Equivalent: the API server sends a v1 client's
// write here too, converted to v2 first.
//
// +kubebuilder:webhook:path=/mutate-example-com-v2-logger,mutating=true,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,groups=example.com,resources=loggers,verbs=create;update,versions=v2,name=mlogger.example.com,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-example-com-v2-logger,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=5,groups=example.com,resources=loggers,verbs=create;update,versions=v2,name=vlogger.example.com,admissionReviewVersions=v1

// The webhooks read the Logger's namespace for its labels, through the
// Manager's cache: a webhook is a client of the API server like any other,
// and needs the RBAC for what it reads (a policy's namespaceObject needs
// none).
//
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// LoggerWebhook defaults and validates Loggers.
type LoggerWebhook struct {
	// Client reads Namespaces (mgr.GetClient(): from the cache).
	Client client.Reader
	// APIReader reads a Namespace the cache has not seen yet from the API
	// server (mgr.GetAPIReader()).
	APIReader client.Reader
}

// SetupWithManager registers both webhooks with the Manager's webhook
// server, at the paths of the markers above (controller-runtime derives
// them from the group, version and kind).
func (w *LoggerWebhook) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &examplev2.Logger{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

// Default copies the namespace's team label to a Logger that has none. The
// namespace comes from the admission request, which names the namespace
// the write goes to (on a create the API server has already copied it onto
// the object).
//
// It also removes examplev1.IntervalAnnotation, v1's copy of an interval
// its whole seconds cannot hold: v2 has spec.interval itself, and v1's
// conversion re-derives the annotation from it, so one written through v2
// (copied from a v1 read, say) would only be lost on the way back. A write
// through v1 never brings it here: v1's ConvertTo removes it. Removed, not
// refused: it carries nothing v2 lacks.
func (w *LoggerWebhook) Default(ctx context.Context, l *examplev2.Logger) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return err
	}
	if fromMigrator(req) {
		logRequest(ctx, req, "mutate", nil, "skipped", migratorFieldManager)
		return nil
	}
	var kv []any
	if _, ok := l.Annotations[examplev1.IntervalAnnotation]; ok {
		delete(l.Annotations, examplev1.IntervalAnnotation)
		kv = append(kv, "removed", examplev1.IntervalAnnotation)
	}
	ns, err := w.namespaceLabels(ctx, req.Namespace)
	if err != nil {
		logRequest(ctx, req, "mutate", err)
		return err
	}
	team, ok := ns[TeamLabel]
	_, has := l.Labels[TeamLabel]
	if !ok || has {
		logRequest(ctx, req, "mutate", nil, kv...)
		return nil
	}
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[TeamLabel] = team
	logRequest(ctx, req, "mutate", nil, append(kv, "team", team)...)
	return nil
}

// migratorFieldManager is the field manager of kube-controller-manager's
// storage version migrator (its controller name), which rewrites every
// stored Logger with an empty server-side apply.
const migratorFieldManager = "storage-version-migrator-controller"

// fromMigrator reports whether the write is the storage migrator's. Its
// empty apply reaches admission as an UPDATE, and defaulting it would turn
// a migration, which only stores each object again in the storage version,
// into a mass edit: every Logger without a team label in a labelled
// namespace would gain one. The API server hands a patch's options to
// admission as UpdateOptions, fieldManager included. Any client may name
// this field manager; it skips the defaulting only, never the validation.
func fromMigrator(req admission.Request) bool {
	if req.Operation != admissionv1.Update || len(req.Options.Raw) == 0 {
		return false
	}
	var opts metav1.UpdateOptions
	if err := json.Unmarshal(req.Options.Raw, &opts); err != nil {
		return false
	}
	return opts.FieldManager == migratorFieldManager
}

// ValidateCreate refuses a Logger whose replicas are over its namespace's
// cap.
func (w *LoggerWebhook) ValidateCreate(ctx context.Context, l *examplev2.Logger) (admission.Warnings, error) {
	return nil, w.validate(ctx, nil, l)
}

// ValidateUpdate refuses an update that raises replicas over the cap; one
// that does not raise them passes, so that a Logger stored before the cap
// was lowered can still be edited.
func (w *LoggerWebhook) ValidateUpdate(ctx context.Context, old, l *examplev2.Logger) (admission.Warnings, error) {
	return nil, w.validate(ctx, old, l)
}

// ValidateDelete is never called: the markers register create and update
// only.
func (w *LoggerWebhook) ValidateDelete(context.Context, *examplev2.Logger) (admission.Warnings, error) {
	return nil, nil
}

// validate is the rule for a create (old is nil) or an update, and logs the
// verdict. A refusal is an Invalid error on spec.replicas, so the API
// server's message reads "spec.replicas: Invalid value: ..."; or, for a
// write through v1, intervalThroughV1's.
func (w *LoggerWebhook) validate(ctx context.Context, old, l *examplev2.Logger) error {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return err
	}
	err = intervalThroughV1(req, old, l)
	if err == nil {
		var ns map[string]string
		if ns, err = w.namespaceLabels(ctx, req.Namespace); err == nil {
			err = check(ns, old, l)
		}
	}
	logRequest(ctx, req, "validate", err)
	return err
}

// intervalThroughV1 refuses an update through v1 that changes v2's
// spec.interval but leaves v1's spec.timeInterval as it was: the change
// came through examplev1.IntervalAnnotation alone, set, changed or
// removed. The API server bumps metadata.generation only when the object
// changes outside metadata in the version the client wrote
// (apiextensions-apiserver's PrepareForUpdate), and here v1's spec may not
// have changed at all: the operator would run the new interval under the
// old generation, and status.observedGeneration == metadata.generation would
// no longer mean that the status describes the spec. req.RequestKind is
// the version the client used; old and l are v2, converted.
func intervalThroughV1(req admission.Request, old, l *examplev2.Logger) error {
	if old == nil || req.RequestKind == nil || req.RequestKind.Version != examplev1.SchemeGroupVersion.Version || old.Spec.Interval == l.Spec.Interval {
		return nil
	}
	// What the v1 client read and what it wrote, in v1.
	var before, after examplev1.Logger
	if before.ConvertFrom(old) != nil || after.ConvertFrom(l) != nil || before.Spec.TimeInterval != after.Spec.TimeInterval {
		return nil
	}
	path := field.NewPath("metadata", "annotations").Key(examplev1.IntervalAnnotation)
	return invalid(l, field.Forbidden(path, fmt.Sprintf(
		"changes the interval (%s to %s) without a change of spec.timeInterval, which would leave metadata.generation as it is; change the interval through example.com/v2 (spec.interval), or through v1's spec.timeInterval",
		old.Spec.Interval, l.Spec.Interval)))
}

// check is the validation rule, a pure function of the namespace's labels
// and the Logger before (nil on create) and after the write.
func check(nsLabels map[string]string, old, l *examplev2.Logger) error {
	value, ok := nsLabels[MaxReplicasLabel]
	if !ok {
		return nil
	}
	path := field.NewPath("spec", "replicas")
	replicas := replicasOf(l)
	limit, err := strconv.ParseUint(value, 10, 31)
	if err != nil {
		return invalid(l, field.Invalid(path, replicas,
			fmt.Sprintf("cannot be checked: namespace label %s is %q, not a whole number", MaxReplicasLabel, value)))
	}
	if int64(replicas) <= int64(limit) {
		return nil
	}
	if old != nil && replicas <= replicasOf(old) {
		return nil
	}
	return invalid(l, field.Invalid(path, replicas,
		fmt.Sprintf("over this namespace's cap of %d (namespace label %s)", limit, MaxReplicasLabel)))
}

// invalid is the 422 Invalid error that names the Logger and the field.
func invalid(l *examplev2.Logger, errs ...*field.Error) error {
	return apierrors.NewInvalid(examplev2.SchemeGroupVersion.WithKind("Logger").GroupKind(), l.Name, errs)
}

// replicasOf is spec.replicas; left out means 1, as the CRD's default.
func replicasOf(l *examplev2.Logger) int32 {
	if l.Spec.Replicas == nil {
		return 1
	}
	return *l.Spec.Replicas
}

// namespaceLabels reads the labels of the namespace: from the cache, else,
// when the cache has not seen it yet (a Namespace and a Logger created in
// one `kubectl apply`), from the API server. The API server has checked
// that the namespace exists before it calls a webhook (its
// NamespaceLifecycle admission plugin runs first), so a NotFound from the
// cache means only that the cache lags. An error returned from here would
// refuse the Logger whatever the webhook's failurePolicy: controller-runtime
// answers allowed=false (with the error's code for an API error, else 403),
// a valid answer, and failurePolicy covers only a call that fails or an
// answer that is not a valid AdmissionReview.
func (w *LoggerWebhook) namespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	var ns corev1.Namespace
	err := w.Client.Get(ctx, client.ObjectKey{Name: name}, &ns)
	if apierrors.IsNotFound(err) {
		err = w.APIReader.Get(ctx, client.ObjectKey{Name: name}, &ns)
	}
	if err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", name, err)
	}
	return ns.Labels, nil
}

// logRequest writes one line per admission request handled, for the log and
// for `make trace-A2`: the webhook, the operation and the verdict (the
// refusal's message when refused). The logger in ctx, from
// controller-runtime, adds the Logger's namespace and name, the user and
// the request's UID.
func logRequest(ctx context.Context, req admission.Request, hook string, err error, kv ...any) {
	log := logf.FromContext(ctx)
	kv = append([]any{"webhook", hook, "operation", req.Operation}, kv...)
	if err != nil {
		log.Info("admission refused", append(kv, "allowed", false, "reason", err.Error())...)
		return
	}
	log.Info("admission allowed", append(kv, "allowed", true)...)
}

package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

var loggerGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "loggers"}

// TestDeletedWhileStopped: a Logger deleted while the operator is down.
// Stage 05 removed its Deployment only when it came back. Here the
// Deployment names the Logger in a controller owner reference, and
// kube-controller-manager's garbage collector deletes it on its own: no
// operator needs to run. A Deployment that merely looks like one of ours,
// without the owner reference, is left alone.
func TestDeletedWhileStopped(t *testing.T) {
	f := features.New("a Logger deleted while the operator is stopped").
		Assess("its Deployment is deleted by the garbage collector, with no operator running", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w := newWorld(t, cfg, "orphan")
			op := w.start(t)
			logger, err := w.C.Dynamic.Resource(loggerGVR).Namespace(w.NS).Create(ctx, newLoggerObject("left", 1), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var d *appsv1.Deployment
			harness.Eventually(t, converge, "Deployment logger-left", func(ctx context.Context) (bool, string, error) {
				d, err = w.Deployment(ctx, "logger-left")
				return d != nil, "", err
			})
			// Exactly one owner reference, and it is the controller: the
			// Logger, by UID, blocking the Logger's foreground deletion
			// until the Deployment is gone.
			if len(d.OwnerReferences) != 1 {
				t.Fatalf("owner references %+v, want exactly one", d.OwnerReferences)
			}
			ref := d.OwnerReferences[0]
			if ref.Kind != "Logger" || ref.APIVersion != "example.com/v1" || ref.Name != "left" || ref.UID != logger.GetUID() ||
				ref.Controller == nil || !*ref.Controller || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
				t.Errorf("owner reference %+v, want the Logger left (uid %s) as controller, blocking owner deletion", ref, logger.GetUID())
			}
			foreign := foreignDeployment(t, w)

			if err := op.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := w.C.Dynamic.Resource(loggerGVR).Namespace(w.NS).Delete(ctx, "left", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitGone(t, "Deployment logger-left, with no operator running,", func(ctx context.Context) error {
				_, err := w.C.Kube.AppsV1().Deployments(w.NS).Get(ctx, "logger-left", metav1.GetOptions{})
				return err
			})
			if _, err := w.C.Kube.AppsV1().Deployments(w.NS).Get(ctx, foreign, metav1.GetOptions{}); err != nil {
				t.Errorf("a Deployment without our owner reference was touched: %v", err)
			}
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

// foreignDeployment creates someone else's Deployment that merely looks like
// one of ours (our name pattern, our instance label) and returns its name.
func foreignDeployment(t *testing.T, w *world) string {
	t.Helper()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "logger-stranger", Labels: map[string]string{"app.kubernetes.io/instance": "stranger"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "stranger"}},
		},
	}
	d.Spec.Template.Labels = map[string]string{"app": "stranger"}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "c", Image: "busybox:1.37"}}
	if _, err := w.C.Kube.AppsV1().Deployments(w.NS).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return d.Name
}

// TestDeletionPropagation deletes a Logger with each propagation policy
// kubectl offers (--cascade=background|foreground|orphan) and checks what
// the garbage collector does with its Deployment, with the operator
// running.
func TestDeletionPropagation(t *testing.T) {
	var w *world
	// create makes a Logger and waits until it is Available; it returns
	// the Logger's and the Deployment's UIDs.
	create := func(t *testing.T, name string) (loggerUID, deploymentUID string) {
		t.Helper()
		u, err := w.C.Dynamic.Resource(loggerGVR).Namespace(w.NS).Create(context.Background(), newLoggerObject(name, 1), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitCondition(t, w, loggerGVR, name, "Available", "True", "MinimumReplicasAvailable")
		d, err := w.Deployment(context.Background(), "logger-"+name)
		if err != nil || d == nil {
			t.Fatalf("no Deployment logger-%s: %v", name, err)
		}
		return string(u.GetUID()), string(d.UID)
	}
	del := func(t *testing.T, name string, policy metav1.DeletionPropagation) {
		t.Helper()
		if err := w.C.Dynamic.Resource(loggerGVR).Namespace(w.NS).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
			t.Fatal(err)
		}
	}
	getLogger := func(name string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			_, err := w.C.Dynamic.Resource(loggerGVR).Namespace(w.NS).Get(ctx, name, metav1.GetOptions{})
			return err
		}
	}
	getDeployment := func(name string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			_, err := w.C.Kube.AppsV1().Deployments(w.NS).Get(ctx, name, metav1.GetOptions{})
			return err
		}
	}

	f := features.New("deletion propagation").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w = newWorld(t, cfg, "propagation")
			w.start(t)
			return ctx
		}).
		Assess("background (the default): the Logger goes at once, the garbage collector deletes the Deployment after", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			create(t, "bg")
			del(t, "bg", metav1.DeletePropagationBackground)
			waitGone(t, "Logger bg", getLogger("bg"))
			waitGone(t, "Deployment logger-bg", getDeployment("logger-bg"))
			return ctx
		}).
		Assess("foreground: the Logger stays, Terminating, until the garbage collector has deleted the Deployment", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			create(t, "fg")
			del(t, "fg", metav1.DeletePropagationForeground)
			// The API server answered the delete by adding the
			// foregroundDeletion finalizer, which the garbage collector
			// removes once every blocking dependent is gone.
			u, err := w.C.Dynamic.Resource(loggerGVR).Namespace(w.NS).Get(ctx, "fg", metav1.GetOptions{})
			if err == nil && (u.GetDeletionTimestamp() == nil || !slices.Contains(u.GetFinalizers(), metav1.FinalizerDeleteDependents)) {
				t.Errorf("right after a foreground delete the Logger has deletionTimestamp %v and finalizers %v, want %s", u.GetDeletionTimestamp(), u.GetFinalizers(), metav1.FinalizerDeleteDependents)
			}
			// Whenever the Logger is seen gone, its Deployment must be gone
			// already: that is what foreground means.
			harness.Eventually(t, converge, "Logger fg to be gone, after its Deployment", func(ctx context.Context) (bool, string, error) {
				loggerErr, deploymentErr := getLogger("fg")(ctx), getDeployment("logger-fg")(ctx)
				if !apierrors.IsNotFound(loggerErr) {
					return false, fmt.Sprintf("Logger still there (%v)", loggerErr), client404(loggerErr)
				}
				if !apierrors.IsNotFound(deploymentErr) {
					t.Errorf("the Logger was gone before its Deployment (%v)", deploymentErr)
				}
				return true, "", nil
			})
			return ctx
		}).
		Assess("orphan: the Deployment stays, without owner; a new Logger of the same name adopts it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			oldLogger, deploymentUID := create(t, "keep")
			del(t, "keep", metav1.DeletePropagationOrphan)
			waitGone(t, "Logger keep", getLogger("keep"))
			// The garbage collector removed the owner reference, and
			// nothing deleted the Deployment: its pods run on.
			harness.Eventually(t, converge, "Deployment logger-keep without owner references", func(ctx context.Context) (bool, string, error) {
				d, err := w.Deployment(ctx, "logger-keep")
				if err != nil || d == nil {
					return false, "no Deployment", err
				}
				return len(d.OwnerReferences) == 0, fmt.Sprintf("owner references %v", d.OwnerReferences), nil
			})
			newLogger, _ := create(t, "keep")
			harness.Eventually(t, converge, "the new Logger to adopt the Deployment", func(ctx context.Context) (bool, string, error) {
				d, err := w.Deployment(ctx, "logger-keep")
				if err != nil || d == nil {
					return false, "no Deployment", err
				}
				if string(d.UID) != deploymentUID {
					t.Fatalf("the Deployment was replaced (uid %s, was %s), not adopted", d.UID, deploymentUID)
				}
				ref := metav1.GetControllerOf(d)
				return ref != nil && string(ref.UID) == newLogger, fmt.Sprintf("controller %v (old Logger %s, new %s)", ref, oldLogger, newLogger), nil
			})
			waitEvent(t, w.C, w.NS, "keep", corev1.EventTypeNormal, "Updated", "adopted")
			return ctx
		}).
		Feature()
	harness.Env().Test(t, f)
}

func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

package behaviour

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// NamesakeOutcome is what a stage does to a Deployment that has a Logger's
// name, logger-<name>, but was made by someone else: it lacks the operator's
// managed-by label. Every field false is the right answer: the Deployment is
// not the operator's, so it is never touched (stages 04 and 05).
type NamesakeOutcome struct {
	// Rewritten: creating the Logger merge-patches the Deployment's replicas
	// and pod template into the Logger's (stage 02, which GETs the name and
	// checks no label).
	Rewritten bool
	// DeletedWithLogger: deleting the Logger deletes the Deployment (stages
	// 02 and 03, which delete by name, with no label check and no UID
	// precondition).
	DeletedWithLogger bool
}

// Namesake checks what the stage does to someone else's Deployment that is
// named like a Logger's, when a Logger of that name is created and deleted.
// want says what the stage does; its e2e test names the outcome.
func Namesake(t *testing.T, s Stage, want NamesakeOutcome) {
	t.Helper()
	harness.Env().Test(t, namesake(s, want))
}

// namesake: a team runs Deployment logger-audit, its own. Someone creates a
// Logger audit, and later deletes it. Where the stage leaves the Deployment
// alone, a sentinel Logger shows that the operator has handled audit.
func namesake(s Stage, want NamesakeOutcome) features.Feature {
	const logger = "audit"
	var (
		f      *fixture
		theirs *appsv1.Deployment
		sent   *sentinels
	)
	name := deploymentName(logger)
	onCreate, onDelete := "creating Logger audit leaves it alone", "deleting Logger audit leaves it alone"
	if want.Rewritten {
		onCreate = "creating Logger audit rewrites it into the Logger's Deployment"
	}
	if want.DeletedWithLogger {
		onDelete = "deleting Logger audit deletes it"
	}
	// untouched fails the test unless the Deployment is still theirs, as
	// they made it.
	untouched := func(t *testing.T) {
		t.Helper()
		d, err := f.Deployment(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case d == nil:
			t.Fatalf("%s, which the operator did not make, was deleted", name)
		case d.UID != theirs.UID:
			t.Fatalf("%s was replaced (uid %s, theirs was %s)", name, d.UID, theirs.UID)
		case !sameContainers(d, theirs) || !ptr.Equal(d.Spec.Replicas, theirs.Spec.Replicas):
			t.Fatalf("%s was changed: replicas %d, containers %s; they made replicas %d, containers %s",
				name, ptr.Deref(d.Spec.Replicas, -1), containers(d), ptr.Deref(theirs.Spec.Replicas, -1), containers(theirs))
		}
	}
	return features.New("a Deployment named like a Logger's, made by someone else").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f = newFixture(t, cfg, s, "namesake")
			theirs = createTheirs(t, f, name, logger)
			sent = &sentinels{f: f}
			sent.startInOrder(t)
			return ctx
		}).
		Assess(onCreate, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f.Create(t, loggerGVR, newLogger(logger, logger, 5, 1))
			if !want.Rewritten {
				sent.handled(t)
				untouched(t)
				// The operator leaves the Logger's status as it was: empty.
				if l, err := f.Get(ctx, loggerGVR, logger); err != nil || l == nil || str(l, "status", "state") != "" {
					t.Errorf("Logger %s: %v, err %v; want it without status.state", logger, l, err)
				}
				return ctx
			}
			d := f.waitDeployment(t, name, func(d *appsv1.Deployment) (bool, string) {
				c := d.Spec.Template.Spec.Containers
				return len(c) == 1 && c[0].Name == containerName, "containers " + containers(d)
			})
			if d.UID != theirs.UID {
				t.Fatalf("%s was replaced, not rewritten: uid %s, theirs was %s", name, d.UID, theirs.UID)
			}
			if d.Labels[managedByLabel] != "" || d.Labels[teamLabel] != logger {
				t.Errorf("labels %v; the repair patch changes only the spec, so the team's label stays and managed-by is not added", d.Labels)
			}
			t.Logf("%s (uid %s), not made by the operator, now runs the Logger's pod template with %d replica(s)", name, d.UID, ptr.Deref(d.Spec.Replicas, -1))
			return ctx
		}).
		Assess(onDelete, func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			f.Delete(t, loggerGVR, logger)
			if want.DeletedWithLogger {
				f.waitDeploymentGone(t, name)
				return ctx
			}
			sent.handled(t)
			untouched(t)
			return ctx
		}).
		Feature()
}

// The labels: the team's own, on the Deployment the test makes as theirs,
// and the one that marks the Deployments the operator made
// (docs/behaviour.md).
const (
	teamLabel      = "team.example.com/app"
	managedByLabel = "app.kubernetes.io/managed-by"
)

// createTheirs creates a Deployment called name, as another team would: its
// own label (teamLabel=app, no managed-by), its own image, no replicas yet.
func createTheirs(t *testing.T, f *fixture, name, app string) *appsv1.Deployment {
	t.Helper()
	labels := map[string]string{teamLabel: app}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "audit", Image: "registry.invalid/team/audit:1", Command: []string{"/audit", "--serve"},
				}}},
			},
		},
	}
	d, err := f.C.Kube.AppsV1().Deployments(f.NS).Create(context.Background(), d, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	return d
}

// sameContainers compares what the team put into the pod template.
func sameContainers(a, b *appsv1.Deployment) bool {
	return slices.EqualFunc(a.Spec.Template.Spec.Containers, b.Spec.Template.Spec.Containers, func(x, y corev1.Container) bool {
		return x.Name == y.Name && x.Image == y.Image && slices.Equal(x.Command, y.Command)
	})
}

// containers names a Deployment's containers and their images, for messages.
func containers(d *appsv1.Deployment) string {
	var out []string
	for _, c := range d.Spec.Template.Spec.Containers {
		out = append(out, c.Name+"="+c.Image)
	}
	return "[" + strings.Join(out, " ") + "]"
}

package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
)

// TestWeaknessOneStuckWatchStopsAllKinds: one loop takes the events of all
// three watches, and a watch that ends is reconnected inside that loop
// (stream.connect), which retries with a growing pause until it succeeds.
// While one kind cannot be watched, no event of any kind is handled. Here
// the operator runs as a user whose right to watch FlightTickets is revoked:
// the ticket watch ends (--watch-timeout 1s), its resume is refused, and a
// Logger created meanwhile gets no Deployment until the right is back.
func TestWeaknessOneStuckWatchStopsAllKinds(t *testing.T) {
	const user = "operator-flow-02-e2e"
	f := features.New("weakness: one loop for every kind").
		Assess("while the ticket watch cannot reconnect, no Logger is served", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			w := newWorld(t, cfg, "one-loop")
			w.createRole(t, "loggers", []rbacv1.PolicyRule{
				{APIGroups: []string{"example.com"}, Resources: []string{"loggers"}, Verbs: []string{"get", "list", "watch", "update"}},
				{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
			})
			w.createRole(t, "tickets", []rbacv1.PolicyRule{
				{APIGroups: []string{"flights.com"}, Resources: []string{"flighttickets"}, Verbs: []string{"get", "list", "watch", "update"}},
			})
			w.bind(t, user, "loggers")
			w.bind(t, user, "tickets")
			w.Kubeconfig = impersonating(t, cfg.KubeconfigFile(), user)
			op := w.start(t, "--watch-timeout", "1s")
			w.createLogger(t, "before", 1)
			w.waitDeployment(t, "logger-before", 1)

			w.unbind(t, "tickets")
			refused := []string{"watch flighttickets:", "forbidden", "trying again in"}
			op.WaitForLog(converge, refused...)
			w.createLogger(t, "during", 1)
			created := time.Now()
			// One more refused reconnect after the Logger was created: the
			// loop is still inside the ticket stream's connect, where no
			// event of any kind is taken.
			n := op.CountLog(refused...)
			harness.Eventually(t, converge, "another refused reconnect of the ticket watch", func(context.Context) (bool, string, error) {
				return op.CountLog(refused...) > n, "none yet", nil
			})
			if got := op.CountLog("loggers", w.NS+"/during "); got != 0 {
				t.Errorf("the operator logged %d events of Logger during while its ticket watch was down; stage 02's one loop should handle none", got)
			}
			if d := w.deployment(t, "logger-during"); d != nil {
				t.Errorf("logger-during was created while the ticket watch was down; stage 02's one loop should be stuck reconnecting it")
			}

			// Not lost, only held up: with the right back, the reconnect
			// succeeds and the loop takes the Logger's event.
			w.bind(t, user, "tickets")
			restored := time.Now()
			w.waitDeployment(t, "logger-during", 1)
			t.Logf("Logger during waited %v for its Deployment, %v of it after the right to watch tickets was back (%d refused reconnects)",
				time.Since(created).Round(time.Millisecond), time.Since(restored).Round(time.Millisecond), op.CountLog(refused...))
			return ctx
		}).Feature()
	harness.Env().Test(t, f)
}

// createRole creates a Role in the world's namespace.
func (w *world) createRole(t *testing.T, name string, rules []rbacv1.PolicyRule) {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := w.C.Kube.RbacV1().Roles(w.NS).Create(context.Background(), role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Role %s: %v", name, err)
	}
}

// bind grants user the Role of that name, with a RoleBinding of the same
// name.
func (w *world) bind(t *testing.T, user, role string) {
	t.Helper()
	b := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
	}
	if _, err := w.C.Kube.RbacV1().RoleBindings(w.NS).Create(context.Background(), b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating RoleBinding %s: %v", role, err)
	}
}

// unbind revokes what bind granted.
func (w *world) unbind(t *testing.T, role string) {
	t.Helper()
	if err := w.C.Kube.RbacV1().RoleBindings(w.NS).Delete(context.Background(), role, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting RoleBinding %s: %v", role, err)
	}
}

// impersonating writes a copy of the kubeconfig whose requests act as user
// (the Impersonate-User header): the test's own credentials, with the rights
// of that user's RoleBindings plus those of system:authenticated, which the
// API server adds to an impersonated user.
func impersonating(t *testing.T, kubeconfig, user string) string {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// The copy lives elsewhere: files it names must not be relative.
	if err := clientcmd.ResolveLocalPaths(kc); err != nil {
		t.Fatal(err)
	}
	ctx, ok := kc.Contexts[kc.CurrentContext]
	if !ok || kc.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatalf("%s: no credentials for its current context %q", kubeconfig, kc.CurrentContext)
	}
	kc.AuthInfos[ctx.AuthInfo].Impersonate = user
	path := filepath.Join(t.TempDir(), "kubeconfig-"+user)
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

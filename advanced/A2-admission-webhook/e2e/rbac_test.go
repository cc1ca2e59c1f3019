package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-flow/operator-flow/harness"
)

// TestWebhookRBAC runs the operator as a ServiceAccount bound to the roles
// controller-gen generated (config/rbac/role.yaml): with them the webhook
// reads the namespace's labels. Then as an account whose ClusterRole lacks
// the namespaces rule: the webhook cannot read the namespace, and with
// failurePolicy Fail the API server refuses the write. A policy reads
// namespaceObject with the API server's own rights and needs no such rule.
func TestWebhookRBAC(t *testing.T) {
	withCluster(t, "the webhook reads namespaces with the operator's RBAC", func(t *testing.T, cfg *envconf.Config) {
		w := harness.NewWorld(t, cfg, "a2-rbac", modulePackage)
		wh := installWebhook(t, w.C, w.NS, admissionregistrationv1.Fail)
		args := append(append([]string{"--namespace", w.NS}, stage.Args[:2]...), wh.args...)

		t.Run("with the generated roles, the team is copied", func(t *testing.T) {
			sa := newAccount(t, w.C, true)
			op := harness.StartOperator(t, sa.kubeconfig, w.Bin, append(args, "--ledger-namespace", sa.namespace)...)
			waitAdmissionActive(t, w.C, w.NS)
			if err := op.Stop(); err != nil {
				t.Fatalf("stopping the operator: %v", err)
			}
		})

		t.Run("without namespaces in the ClusterRole, the write is refused", func(t *testing.T) {
			sa := newAccount(t, w.C, false)
			op := harness.StartOperator(t, sa.kubeconfig, w.Bin, append(args, "--ledger-namespace", sa.namespace)...)
			// The webhook server takes the call but cannot read the
			// namespace (the cache's list of namespaces is forbidden), so
			// it does not answer before the API server's timeout.
			op.WaitForLog(converge, "Serving webhook server")
			start := time.Now()
			o, err := probe(context.Background(), w.C, w.NS)
			if err != nil {
				t.Fatal(err)
			}
			if o.allowed {
				t.Fatalf("want the write refused, got %s", o)
			}
			t.Logf("refused after %.1fs: %s", time.Since(start).Seconds(), o.message)
			op.WaitForLog(converge, "namespaces is forbidden")
		})
	})
}

// account is a ServiceAccount bound to copies of the generated roles, and a
// kubeconfig that authenticates as it.
type account struct {
	namespace, name, kubeconfig string
}

// newAccount creates the account in a namespace of its own, binds it to a
// copy of the generated ClusterRole (without its namespaces rule unless
// withNamespaces) and of the generated Roles, in its namespace, and writes
// a kubeconfig with a token for it. Everything goes when t ends.
func newAccount(t *testing.T, c *harness.Clients, withNamespaces bool) *account {
	t.Helper()
	ctx := context.Background()
	sa := &account{namespace: c.Namespace(t, "a2-account"), name: "operator"}
	objs, err := harness.ReadObjects(harness.RepoPath("advanced", "A2-admission-webhook", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.name, Namespace: sa.namespace}}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Kube.CoreV1().ServiceAccounts(sa.namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa.name}}, metav1.CreateOptions{}))
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			cr := &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cr); err != nil {
				t.Fatal(err)
			}
			if !withNamespaces {
				cr.Rules = slices.DeleteFunc(cr.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "namespaces") })
			}
			name := cr.Name + "-" + sa.namespace
			cr.ObjectMeta = metav1.ObjectMeta{Name: name}
			must(c.Kube.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}))
			must(c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects:   subject,
			}, metav1.CreateOptions{}))
			t.Cleanup(func() {
				_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
				_ = c.Kube.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
			})
		case "Role":
			role := &rbacv1.Role{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
				t.Fatal(err)
			}
			role.ObjectMeta = metav1.ObjectMeta{Name: role.Name, Namespace: sa.namespace}
			must(c.Kube.RbacV1().Roles(sa.namespace).Create(ctx, role, metav1.CreateOptions{}))
			must(c.Kube.RbacV1().RoleBindings(sa.namespace).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: sa.namespace},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
				Subjects:   subject,
			}, metav1.CreateOptions{}))
		}
	}
	tok, err := c.Kube.CoreV1().ServiceAccounts(sa.namespace).CreateToken(ctx, sa.name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa.kubeconfig = tokenKubeconfig(t, c.Config, tok.Status.Token)
	return sa
}

// tokenKubeconfig writes a kubeconfig for the same API server as cfg,
// trusting the same CA, that authenticates with token alone.
func tokenKubeconfig(t *testing.T, cfg *rest.Config, token string) string {
	t.Helper()
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["operator"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "operator"}
	kc.CurrentContext = "operator"
	path := filepath.Join(t.TempDir(), "kubeconfig-operator")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

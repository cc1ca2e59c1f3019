package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/operator-flow/operator-flow/harness"
)

// base is the operator this module runs: stage 06's, unchanged.
const base = "./06-status-and-owners"

// deployedAccount is the user name of stage 06's in-cluster account, which
// config/admission/operator-deployments.yaml narrows.
const deployedAccount = "system:serviceaccount:operator-flow-system:operator-flow-06"

// TestOperatorAccountNarrowed runs stage 06's operator as a ServiceAccount
// with the RBAC controller-gen generated for it, and points the
// operator-deployments policy at that account. The operator still does its
// work: the Deployments it writes are its own kind. A Deployment whose pods
// would run as another ServiceAccount, or that lacks the managed-by label,
// is refused when the account writes it, although RBAC allows the write.
func TestOperatorAccountNarrowed(t *testing.T) {
	c := clients(t)
	ctx := context.Background()
	account := c.Namespace(t, "a1-operator")
	token, kubeconfig := operatorAccount(t, c, account)

	// The policy names stage 06's in-cluster account; here it names this
	// test's.
	username := "system:serviceaccount:" + account + ":operator"
	named := false
	install(t, c, "operator-deployments.yaml", "", func(o *unstructured.Unstructured) {
		if o.GetKind() != "ValidatingAdmissionPolicy" {
			return
		}
		conds, _, _ := unstructured.NestedSlice(o.Object, "spec", "matchConditions")
		for _, cond := range conds {
			m := cond.(map[string]any)
			if expr, ok := m["expression"].(string); ok && strings.Contains(expr, deployedAccount) {
				m["expression"] = strings.ReplaceAll(expr, deployedAccount, username)
				named = true
			}
		}
		must(t, unstructured.SetNestedSlice(o.Object, conds, "spec", "matchConditions"))
	})
	if !named {
		t.Fatalf("no match condition of operator-deployments.yaml names the operator's account %s (request.userInfo.username == '%s')", deployedAccount, deployedAccount)
	}

	cfg := rest.AnonymousClientConfig(c.Config)
	cfg.BearerToken = token
	asOperator, err := kubernetes.NewForConfig(cfg)
	must(t, err)
	work := c.Namespace(t, "a1-work")

	t.Run("a Deployment that runs as another ServiceAccount is refused", func(t *testing.T) {
		d := deployment("escalate", map[string]string{"app.kubernetes.io/managed-by": "operator-flow"}, "admin-bot")
		harness.Eventually(t, settle, "the account's create to be refused", func(ctx context.Context) (bool, string, error) {
			_, err := asOperator.AppsV1().Deployments(work).Create(ctx, d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil {
				return false, "admitted", nil
			}
			return strings.Contains(err.Error(), "default ServiceAccount, not admin-bot"), err.Error(), nil
		})
		// RBAC alone would let it through: the same request as an admin passes.
		if _, err := c.Kube.AppsV1().Deployments(work).Create(ctx, d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("an admin's create of the same Deployment: %v; want it admitted, the policy binds the operator's account only", err)
		}
	})

	t.Run("so is one that names the account in the deprecated field serviceAccount", func(t *testing.T) {
		// The API server copies serviceAccount into serviceAccountName
		// when that is empty, before admission sees the object.
		d := deployment("alias", map[string]string{"app.kubernetes.io/managed-by": "operator-flow"}, "")
		d.Spec.Template.Spec.DeprecatedServiceAccount = "admin-bot"
		_, err := asOperator.AppsV1().Deployments(work).Create(ctx, d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), "not admin-bot") {
			t.Errorf("the account's create of a Deployment with serviceAccount admin-bot: %v; want it refused", err)
		}
	})

	t.Run("a Deployment without the managed-by label is refused", func(t *testing.T) {
		_, err := asOperator.AppsV1().Deployments(work).Create(ctx, deployment("unmarked", nil, ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), "app.kubernetes.io/managed-by=operator-flow") {
			t.Errorf("the account's create of a Deployment without the label: %v; want it refused", err)
		}
	})

	t.Run("the operator, as the account, still keeps a Logger's Deployment", func(t *testing.T) {
		bin := harness.BuildOperator(t, harness.OperatorPackage(base))
		op := harness.StartOperator(t, kubeconfig, bin, "--namespace", work, "--ledger-namespace", account,
			"--metrics-bind-address=0", "--health-probe-bind-address=0")
		defer func() { must(t, op.Stop()) }()
		if _, err := c.Dynamic.Resource(loggers).Namespace(work).Create(ctx, harness.NewLogger("kept", "kept", 10, 2), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		harness.Eventually(t, time.Minute, "the Logger to be Available", func(ctx context.Context) (bool, string, error) {
			l, err := c.Dynamic.Resource(loggers).Namespace(work).Get(ctx, "kept", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			state, _, _ := unstructured.NestedString(l.Object, "status", "state")
			return state == "Available", "status.state " + state, nil
		})
		if n := op.CountLog("forbidden"); n > 0 {
			t.Errorf("the operator logged %d refusals:\n%s", n, op.Log())
		}
	})
}

func deployment(name string, labels map[string]string, serviceAccount string) *appsv1.Deployment {
	pod := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: pod},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: pod},
				Spec: corev1.PodSpec{
					ServiceAccountName: serviceAccount,
					Containers:         []corev1.Container{{Name: "main", Image: "busybox:1.37"}},
				},
			},
		},
	}
}

// operatorAccount creates ServiceAccount "operator" in ns with the
// ClusterRole and Roles of stage 06's config/rbac/role.yaml (the Roles in
// ns, its ledger), and returns a token for it and a kubeconfig with it.
func operatorAccount(t *testing.T, c *harness.Clients, ns string) (token, kubeconfig string) {
	t.Helper()
	ctx := context.Background()
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "operator", Namespace: ns}}
	_, err := c.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "operator"}}, metav1.CreateOptions{})
	must(t, err)
	objs, err := harness.ReadObjects(harness.RepoPath("06-status-and-owners", "config", "rbac", "role.yaml"))
	must(t, err)
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			cr := &rbacv1.ClusterRole{}
			must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cr))
			cr.ObjectMeta = metav1.ObjectMeta{Name: cr.Name + "-" + ns}
			_, err = c.Kube.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{})
			must(t, err)
			_, err = c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
				Subjects:   subject,
			}, metav1.CreateOptions{})
			must(t, err)
			t.Cleanup(func() {
				_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), cr.Name, metav1.DeleteOptions{})
				_ = c.Kube.RbacV1().ClusterRoles().Delete(context.Background(), cr.Name, metav1.DeleteOptions{})
			})
		case "Role":
			role := &rbacv1.Role{}
			must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role))
			role.ObjectMeta = metav1.ObjectMeta{Name: role.Name, Namespace: ns}
			_, err = c.Kube.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
			must(t, err)
			_, err = c.Kube.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role.Name},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
				Subjects:   subject,
			}, metav1.CreateOptions{})
			must(t, err)
		}
	}
	tok, err := c.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "operator", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	must(t, err)

	ca := c.Config.CAData
	if len(ca) == 0 && c.Config.CAFile != "" {
		ca, err = os.ReadFile(c.Config.CAFile)
		must(t, err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: ca}
	kc.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	kc.Contexts["operator"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "operator"}
	kc.CurrentContext = "operator"
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig-operator")
	must(t, clientcmd.WriteToFile(*kc, kubeconfig))
	return tok.Status.Token, kubeconfig
}

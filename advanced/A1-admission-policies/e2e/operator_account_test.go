package e2e

import (
	"context"
	"fmt"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/operator-flow/operator-flow/harness"
)

// base is the operator this module runs: stage 06's, unchanged.
const base = "./06-status-and-owners"

// accountName is the name of stage 06's in-cluster ServiceAccount
// (operator-flow-06 in operator-flow-system, make deploy-6), which
// config/admission/operator-deployments.yaml narrows in any namespace.
const accountName = "operator-flow-06"

// deployedAccount is the user name the policy once named literally; the
// test puts its own account's name in its place if a copy still does.
const deployedAccount = "system:serviceaccount:operator-flow-system:operator-flow-06"

// TestOperatorAccountNarrowed runs stage 06's operator as a ServiceAccount
// named like stage 06's, in a namespace of the test's, with the RBAC
// controller-gen generated for it, under the policies of
// operator-deployments.yaml, unchanged but for their names: they match the
// account by its name in any namespace. The operator still makes, repairs,
// relabels and adopts its Deployments. Every other request of
// docs/reliability.md's table, sent by the same account as a dry run, is
// refused with a message that names what is wrong, although RBAC allows
// it; and the table says what the API server answers.
func TestOperatorAccountNarrowed(t *testing.T) {
	c := clients(t)
	ctx := context.Background()
	account := c.Namespace(t, "a1-operator")
	token, kubeconfig := operatorAccount(t, c, account)
	username := "system:serviceaccount:" + account + ":" + accountName
	work := c.Namespace(t, "a1-work")
	rows := c.Namespace(t, "a1-rows")
	other := c.Namespace(t, "a1-other")

	// The images parameter first, then the policies, then their bindings,
	// as kubectl apply creates them from the file.
	param := installParam(t, c)
	install(t, c, "operator-deployments.yaml", "", func(o *unstructured.Unstructured) {
		switch o.GetKind() {
		case "ValidatingAdmissionPolicy":
			conds, _, _ := unstructured.NestedSlice(o.Object, "spec", "matchConditions")
			for _, cond := range conds {
				m := cond.(map[string]any)
				m["expression"] = strings.ReplaceAll(m["expression"].(string), deployedAccount, username)
			}
			must(t, unstructured.SetNestedSlice(o.Object, conds, "spec", "matchConditions"))
		case "ValidatingAdmissionPolicyBinding":
			// This test's namespaces and kube-system only: other tests
			// share the cluster.
			must(t, unstructured.SetNestedSlice(o.Object, []any{map[string]any{
				"key": "kubernetes.io/metadata.name", "operator": "In",
				"values": []any{account, work, rows, other, "kube-system"},
			}}, "spec", "matchResources", "namespaceSelector", "matchExpressions"))
			if _, ok, _ := unstructured.NestedMap(o.Object, "spec", "paramRef"); ok {
				must(t, unstructured.SetNestedField(o.Object, param, "spec", "paramRef", "name"))
			}
		}
	})

	cfg := rest.AnonymousClientConfig(c.Config)
	cfg.BearerToken = token
	asOperator, err := kubernetes.NewForConfig(cfg)
	must(t, err)
	f := makeFixtures(t, c, rows)
	f.asAccount = asOperator

	// The policies act once their informers have them, and the parameter.
	harness.Eventually(t, settle, "the policies to refuse an unlabelled Deployment and admit the operator's", func(context.Context) (bool, string, error) {
		bad := operatorDeployment(rows, "fresh", f.fresh)
		bad.Labels = nil
		_, err := asOperator.AppsV1().Deployments(rows).Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return false, "an unlabelled Deployment admitted", nil
		}
		_, err = asOperator.AppsV1().Deployments(rows).Create(ctx, operatorDeployment(rows, "fresh", f.fresh), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, "the operator's own Deployment refused: " + err.Error(), nil
		}
		return true, "", nil
	})

	for _, r := range requests(f) {
		t.Run(r.what, func(t *testing.T) {
			if r.allowed {
				if err := r.send(ctx); err != nil {
					t.Errorf("refused: %v; want admitted", err)
				}
				return
			}
			harness.Eventually(t, settle, "the request to be refused, naming "+r.names, func(context.Context) (bool, string, error) {
				err := r.send(ctx) // the test's: a request cut short by the deadline would hide the last answer
				if err == nil {
					return false, "admitted", nil
				}
				return strings.Contains(err.Error(), r.names), err.Error(), nil
			})
		})
	}

	t.Run("docs/reliability.md's table is these requests and answers", func(t *testing.T) {
		want := requests(f)
		got := documentedRequests(t)
		for i := range max(len(want), len(got)) {
			var w, g request
			if i < len(want) {
				w = want[i]
			}
			if i < len(got) {
				g = got[i]
			}
			if w.what != g.what || w.allowed != g.allowed || w.names != g.names {
				t.Errorf("row %d: docs/reliability.md has %q | %v | %q; the test sends %q | %v | %q", i+1, g.what, g.allowed, g.names, w.what, w.allowed, w.names)
			}
		}
	})

	t.Run("an admin's identical request passes: the policies bind the account only", func(t *testing.T) {
		d := operatorDeployment(rows, "fresh", f.fresh)
		d.Spec.Template.Spec.ServiceAccountName = "admin-bot"
		d.Spec.Template.Spec.Containers[0].Image = "busybox:1.36"
		if _, err := c.Kube.AppsV1().Deployments(rows).Create(ctx, d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("an admin's create: %v; want it admitted", err)
		}
	})

	t.Run("an account of the same name installed in another namespace is narrowed too", func(t *testing.T) {
		elsewhere := c.Namespace(t, "a1-install")
		otherToken, _ := operatorAccount(t, c, elsewhere)
		cfg := rest.AnonymousClientConfig(c.Config)
		cfg.BearerToken = otherToken
		as, err := kubernetes.NewForConfig(cfg)
		must(t, err)
		d := operatorDeployment(other, "own", f.own)
		d.Spec.Template.Spec.HostPID = true
		// The bindings above do not cover the new namespace; the account
		// writes into a covered one.
		harness.Eventually(t, settle, "the other install's privileged create to be refused", func(ctx context.Context) (bool, string, error) {
			_, err := as.AppsV1().Deployments(other).Create(ctx, d, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil {
				return false, "admitted", nil
			}
			return strings.Contains(err.Error(), "may not write a pod template with hostPID"), err.Error(), nil
		})
		if _, err := as.AppsV1().Deployments(other).Create(ctx, operatorDeployment(other, "own", f.own), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("the other install's create of the operator's Deployment: %v; want it admitted", err)
		}
	})

	t.Run("the operator, as the account, still makes, repairs, relabels and adopts its Deployments", func(t *testing.T) {
		// A labelled Deployment with no controller, as stage 05 left it.
		orphan := operatorDeployment(work, "adopted", "")
		orphan.OwnerReferences = nil
		_, err := c.Kube.AppsV1().Deployments(work).Create(ctx, orphan, metav1.CreateOptions{})
		must(t, err)
		bin := harness.BuildOperator(t, harness.OperatorPackage(base))
		op := harness.StartOperator(t, kubeconfig, bin, "--namespace", work, "--ledger-namespace", account,
			"--metrics-bind-address=0", "--health-probe-bind-address=0")
		defer func() { must(t, op.Stop()) }()
		for _, l := range []*unstructured.Unstructured{harness.NewLogger("kept", "kept", 10, 2), harness.NewLogger("adopted", "adopted", 10, 1)} {
			_, err := c.Dynamic.Resource(loggers).Namespace(work).Create(ctx, l, metav1.CreateOptions{})
			must(t, err)
		}
		available(t, c, work, "kept")
		harness.Eventually(t, time.Minute, "logger-adopted to be controlled by the Logger adopted", func(ctx context.Context) (bool, string, error) {
			d, err := c.Kube.AppsV1().Deployments(work).Get(ctx, "logger-adopted", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			owner := metav1.GetControllerOf(d)
			return owner != nil && owner.Kind == "Logger" && owner.Name == "adopted", fmt.Sprintf("controller %v", owner), nil
		})

		// Drift, and the label removed: both put back by the account.
		_, err = c.Kube.AppsV1().Deployments(work).Patch(ctx, "logger-kept", types.MergePatchType,
			[]byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{})
		must(t, err)
		harness.Eventually(t, time.Minute, "logger-kept's replicas to be repaired to 2", func(ctx context.Context) (bool, string, error) {
			d, err := c.Kube.AppsV1().Deployments(work).Get(ctx, "logger-kept", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			return ptr.Deref(d.Spec.Replicas, 0) == 2, fmt.Sprintf("replicas %d", ptr.Deref(d.Spec.Replicas, 0)), nil
		})
		_, err = c.Kube.AppsV1().Deployments(work).Patch(ctx, "logger-kept", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"app.kubernetes.io/managed-by":null}}}`), metav1.PatchOptions{})
		must(t, err)
		harness.Eventually(t, time.Minute, "logger-kept's managed-by label to be put back", func(ctx context.Context) (bool, string, error) {
			d, err := c.Kube.AppsV1().Deployments(work).Get(ctx, "logger-kept", metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			return d.Labels["app.kubernetes.io/managed-by"] == "operator-flow", fmt.Sprintf("labels %v", d.Labels), nil
		})
		if n := op.CountLog("forbidden"); n > 0 {
			t.Errorf("the operator logged %d refusals:\n%s", n, op.Log())
		}
	})
}

// available waits for the Logger name in ns to be Available.
func available(t *testing.T, c *harness.Clients, ns, name string) {
	t.Helper()
	harness.Eventually(t, time.Minute, "the Logger "+name+" to be Available", func(ctx context.Context) (bool, string, error) {
		l, err := c.Dynamic.Resource(loggers).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		state, _, _ := unstructured.NestedString(l.Object, "status", "state")
		return state == "Available", "status.state " + state, nil
	})
}

// installParam creates the Namespaces of operator-deployments.yaml (the
// images parameter), each renamed with a suffix of its own, and deletes
// them when the test ends. It returns the name of the last ("" when the
// file has none).
func installParam(t *testing.T, c *harness.Clients) (name string) {
	t.Helper()
	objs, err := harness.ReadObjects(policyFile("operator-deployments.yaml"))
	must(t, err)
	for _, o := range objs {
		if o.GetKind() != "Namespace" {
			continue
		}
		ns := &corev1.Namespace{}
		must(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, ns))
		ns.Name += "-" + rand.String(5)
		_, err := c.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
		must(t, err)
		t.Cleanup(func() {
			_ = c.Kube.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		})
		name = ns.Name
	}
	return name
}

// makeFixtures creates, as an admin, the objects requests act on (fixtures).
func makeFixtures(t *testing.T, c *harness.Clients, ns string) fixtures {
	t.Helper()
	ctx := context.Background()
	f := fixtures{ns: ns}
	for _, l := range []struct {
		name string
		uid  *types.UID
	}{{"own", &f.own}, {"unlabelled", &f.unlabelled}, {"orphan", &f.orphan}, {"fresh", &f.fresh}, {"tolerated", &f.tolerated}} {
		o, err := c.Dynamic.Resource(loggers).Namespace(ns).Create(ctx, harness.NewLogger(l.name, l.name, 10, 1), metav1.CreateOptions{})
		must(t, err)
		*l.uid = o.GetUID()
	}
	unlabelled := operatorDeployment(ns, "unlabelled", f.unlabelled)
	delete(unlabelled.Labels, "app.kubernetes.io/managed-by")
	orphan := operatorDeployment(ns, "orphan", "")
	orphan.OwnerReferences = nil
	tolerated := operatorDeployment(ns, "tolerated", f.tolerated)
	tolerated.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	for _, d := range []*appsv1.Deployment{operatorDeployment(ns, "own", f.own), unlabelled, orphan, tolerated, deployment("foreign", nil, "")} {
		_, err := c.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		must(t, err)
	}
	return f
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

// operatorAccount creates ServiceAccount accountName in ns with the
// ClusterRole and Roles of stage 06's config/rbac/role.yaml (the Roles in
// ns, its ledger), and returns a token for it and a kubeconfig with it.
func operatorAccount(t *testing.T, c *harness.Clients, ns string) (token, kubeconfig string) {
	t.Helper()
	ctx := context.Background()
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: accountName, Namespace: ns}}
	_, err := c.Kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: accountName}}, metav1.CreateOptions{})
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
	tok, err := c.Kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, accountName, &authenticationv1.TokenRequest{
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

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/behaviour"
)

// TestLeastPrivilege runs the operator as a ServiceAccount that has nothing
// but the RBAC controller-gen generated from the +kubebuilder:rbac markers
// (config/rbac/role.yaml): if a marker were missing, some request would be
// forbidden and a check would fail. And it shows the account cannot read
// what the code never needs, such as Secrets.
func TestLeastPrivilege(t *testing.T) {
	c, err := harness.NewClients(harness.Env().EnvConf().Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	sa := newOperatorAccount(t, c)

	t.Run("the behaviour suite passes with only the generated ClusterRole", func(t *testing.T) {
		s := stage
		// The fixture passes the admin kubeconfig first; Go's flag package
		// keeps the last value of a flag, so this one wins.
		s.Args = append([]string{"--kubeconfig", sa.kubeconfig}, stage.Args...)
		// With only the generated roles, a refused request means a
		// missing rule: no operator of the suite may log "forbidden".
		s.NothingForbidden = true
		behaviour.Run(t, s)
	})

	t.Run("leader election works with only the generated Role", func(t *testing.T) {
		harness.Env().Test(t, leaderElectionAs(sa))
	})

	t.Run("it authenticates as the ServiceAccount, and serves /metrics as it", func(t *testing.T) {
		harness.Env().Test(t, identityAndMetrics(sa))
	})

	t.Run("it cannot read Secrets", func(t *testing.T) {
		for _, verb := range []string{"get", "list", "watch"} {
			for _, ns := range []string{sa.namespace, ""} { // its own namespace, and cluster-wide
				if allowed(t, c, sa, verb, "", "secrets", ns) {
					t.Errorf("the operator's account may %s secrets in namespace %q", verb, ns)
				}
			}
		}
		// The same question, the way a person asks it, with the account's
		// own credentials.
		out, err := kubectl(sa, "auth", "can-i", "get", "secrets", "-n", sa.namespace)
		if strings.TrimSpace(out) != "no" || err == nil {
			t.Errorf("kubectl auth can-i get secrets: %q (err %v), want \"no\"", out, err)
		}
		out, err = kubectl(sa, "auth", "can-i", "list", "flighttickets.flights.com", "-n", sa.namespace)
		if strings.TrimSpace(out) != "yes" || err != nil {
			t.Errorf("kubectl auth can-i list flighttickets: %q (err %v), want \"yes\"", out, err)
		}
		list, err := kubectl(sa, "auth", "can-i", "--list", "-n", sa.namespace)
		if err != nil {
			t.Fatalf("kubectl auth can-i --list: %v\n%s", err, list)
		}
		t.Logf("kubectl auth can-i --list -n %s, as the operator:\n%s", sa.namespace, list)
		// Every line is either a generated rule or what Kubernetes grants
		// every authenticated user (discovery, and asking about oneself).
		cr, role := generatedRoles(t)
		granted := append(append([]rbacv1.PolicyRule{}, cr.Rules...), role.Rules...)
		for _, extra := range beyondRoles(list, granted) {
			t.Errorf("kubectl auth can-i --list shows a permission the generated roles do not grant: %s", extra)
		}
		// docs/reliability.md shows this list: its resource lines are the
		// ones kubectl prints from the API server's SelfSubjectRulesReview
		// answer, neither more nor fewer.
		shown := resourceLines(docCanI(t))
		if got := resourceLines(list); !slices.Equal(shown, got) {
			t.Errorf("the resource lines of `kubectl auth can-i --list` in %s differ from kubectl's output of the API server's answer:\n%s:\n%s\nanswer:\n%s", canIDoc, canIDoc,
				strings.Join(shown, "\n"), strings.Join(got, "\n"))
		}
	})
}

// canIDoc is the document that shows what stage 05's account may do, as
// `kubectl auth can-i --list` prints it.
var canIDoc = filepath.Join("..", "..", "docs", "reliability.md")

// docCanI is the output canIDoc shows under its first
// `$ kubectl auth can-i --list` command.
func docCanI(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(canIDoc)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "$ kubectl auth can-i --list"):
			in = true
		case in && (strings.HasPrefix(line, "$ ") || strings.HasPrefix(line, "```")):
			return strings.Join(out, "\n")
		case in:
			out = append(out, line)
		}
	}
	t.Fatalf("%s shows no `$ kubectl auth can-i --list` output", canIDoc)
	return ""
}

// resourceLines are the lines of `kubectl auth can-i --list` that name a
// resource (not the header, not a non-resource URL), spaces normalised and
// sorted.
func resourceLines(list string) []string {
	var out []string
	for _, line := range strings.Split(list, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] == "Resources" || strings.HasPrefix(fields[0], "[") || fields[0] == "..." {
			continue
		}
		out = append(out, strings.Join(fields, " "))
	}
	slices.Sort(out)
	return out
}

// operatorAccount is a ServiceAccount bound to copies of the generated roles,
// and a kubeconfig that authenticates as it.
type operatorAccount struct {
	namespace, name string
	kubeconfig      string
}

// newOperatorAccount creates the ServiceAccount, binds it to the generated
// ClusterRole (cluster-wide, because the behaviour suite makes a namespace per
// check) and to the generated leader-election Role (in its own namespace),
// and writes a kubeconfig with a token for it. The roles are copies under
// names of this test's own, so that nothing shared in the cluster changes,
// and they are deleted when the test ends.
func newOperatorAccount(t *testing.T, c *harness.Clients) *operatorAccount {
	t.Helper()
	ctx := context.Background()
	sa := &operatorAccount{namespace: c.Namespace(t, "least-privilege"), name: "operator"}
	cr, role := generatedRoles(t)
	unique := cr.Name + "-" + sa.namespace
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.name, Namespace: sa.namespace}}

	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Kube.CoreV1().ServiceAccounts(sa.namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa.name}}, metav1.CreateOptions{}))

	cr.ObjectMeta = metav1.ObjectMeta{Name: unique}
	must(c.Kube.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}))
	must(c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: unique},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: unique},
		Subjects:   subject,
	}, metav1.CreateOptions{}))
	t.Cleanup(func() {
		_ = c.Kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), unique, metav1.DeleteOptions{})
		_ = c.Kube.RbacV1().ClusterRoles().Delete(context.Background(), unique, metav1.DeleteOptions{})
	})

	role.ObjectMeta = metav1.ObjectMeta{Name: role.Name, Namespace: sa.namespace}
	must(c.Kube.RbacV1().Roles(sa.namespace).Create(ctx, role, metav1.CreateOptions{}))
	must(c.Kube.RbacV1().RoleBindings(sa.namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   subject,
	}, metav1.CreateOptions{}))

	// A token from the TokenRequest API, as the kubelet mounts into a pod.
	tok, err := c.Kube.CoreV1().ServiceAccounts(sa.namespace).CreateToken(ctx, sa.name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sa.kubeconfig = writeTokenKubeconfig(t, c.Config, tok.Status.Token)
	return sa
}

// generatedRoles reads the ClusterRole and the leader-election Role from
// config/rbac/role.yaml, exactly as controller-gen wrote them.
func generatedRoles(t *testing.T) (*rbacv1.ClusterRole, *rbacv1.Role) {
	t.Helper()
	objs, err := harness.ReadObjects(harness.RepoPath("05-controller-runtime", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cr *rbacv1.ClusterRole
	var role *rbacv1.Role
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			cr = &rbacv1.ClusterRole{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cr)
		case "Role":
			role = &rbacv1.Role{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if cr == nil || role == nil {
		t.Fatal("config/rbac/role.yaml lacks the ClusterRole or the Role; run make manifests-05")
	}
	return cr, role
}

// writeTokenKubeconfig writes a kubeconfig for the same API server as cfg,
// trusting the same CA, that authenticates with token alone.
func writeTokenKubeconfig(t *testing.T, cfg *rest.Config, token string) string {
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

// leaderElectionAs runs the operator as the account with --leader-elect in
// the account's namespace: it must take the Lease, record its Event and
// reconcile, with no request forbidden.
func leaderElectionAs(sa *operatorAccount) features.Feature {
	return features.New("leader election as the operator's account").
		Assess("the operator takes the Lease, books a ticket and is refused nothing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, err := harness.NewClients(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			bin := harness.BuildOperator(t, harness.OperatorPackage(stage.Package))
			op := harness.StartOperator(t, sa.kubeconfig, bin, append([]string{"--namespace", sa.namespace, "--leader-elect"}, stage.Args...)...)
			op.WaitForLog(converge, logLeading)
			createTicket(t, c, sa.namespace, "as-operator")
			waitBooked(t, c, sa.namespace, "as-operator")
			if err := op.Stop(); err != nil { // releasing the Lease is a write too
				t.Fatalf("the operator did not stop cleanly: %v", err)
			}
			if n := op.CountLog("forbidden"); n != 0 {
				t.Errorf("%d requests were forbidden; the generated RBAC misses a permission the code uses:\n%s", n, op.Log())
			}
			return ctx
		}).
		Feature()
}

// allowed asks the API server whether the account may do verb on resource in
// ns ("" for cluster-wide), with a SubjectAccessReview.
func allowed(t *testing.T, c *harness.Clients, sa *operatorAccount, verb, group, resource, ns string) bool {
	t.Helper()
	sar, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   fmt.Sprintf("system:serviceaccount:%s:%s", sa.namespace, sa.name),
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: verb, Group: group, Resource: resource,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// kubectl runs ./bin/kubectl as the account.
func kubectl(sa *operatorAccount, args ...string) (string, error) {
	cmd := exec.Command(harness.RepoPath("bin", "kubectl"), append([]string{"--kubeconfig", sa.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// everyUser is what Kubernetes grants any authenticated user
// (system:basic-user and system:discovery): asking about oneself.
var everyUser = map[string]bool{
	"selfsubjectreviews.authentication.k8s.io":      true,
	"selfsubjectaccessreviews.authorization.k8s.io": true,
	"selfsubjectrulesreviews.authorization.k8s.io":  true,
}

// beyondRoles returns the lines of `kubectl auth can-i --list` whose
// resource, with any of its verbs, no rule in granted allows. Lines of
// non-resource URLs (discovery, /healthz and the like) are left out: every
// user has those.
func beyondRoles(list string, granted []rbacv1.PolicyRule) []string {
	var extra []string
	for _, line := range strings.Split(list, "\n")[1:] { // the first is the header
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "[") || everyUser[fields[0]] {
			continue
		}
		// resource.group, or resource.group/subresource; a core
		// resource has no group.
		name, sub, _ := strings.Cut(fields[0], "/")
		resource, group, _ := strings.Cut(name, ".")
		if sub != "" {
			resource += "/" + sub
		}
		verbs := strings.Fields(strings.Trim(line[strings.LastIndex(line, "["):], "[]"))
		for _, verb := range verbs {
			if !allows(granted, group, resource, verb) {
				extra = append(extra, line)
				break
			}
		}
	}
	return extra
}

func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// identityAndMetrics starts the operator the way the behaviour suite above
// does (the admin kubeconfig first, the account's last), and shows whom the
// API server takes it for: with the Lease in namespace default, where the
// account has no Role, leader election is refused, and the refusal names
// the user. Its /metrics then answers a reader and refuses a stranger,
// which takes a TokenReview and a SubjectAccessReview sent as the account:
// the only use of those two rules of the generated ClusterRole.
func identityAndMetrics(sa *operatorAccount) features.Feature {
	return features.New("the operator's identity").
		Assess("the API server sees the ServiceAccount, and /metrics works under it", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, err := harness.NewClients(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			user := fmt.Sprintf("system:serviceaccount:%s:%s", sa.namespace, sa.name)
			metrics := freeAddr(t)
			bin := harness.BuildOperator(t, harness.OperatorPackage(stage.Package))
			op := harness.StartOperator(t, cfg.KubeconfigFile(), bin, append(append([]string{"--kubeconfig", sa.kubeconfig}, stage.Args...),
				"--namespace", sa.namespace, "--leader-elect", "--leader-elect-namespace", "default",
				"--metrics-bind-address", metrics)...)
			op.WaitForLog(converge, "forbidden", user)
			url := "https://" + metrics + "/metrics"
			reader := metricsToken(t, c, sa.namespace, "scraper", true)
			stranger := metricsToken(t, c, sa.namespace, "stranger", false)
			harness.Eventually(t, converge, "/metrics to answer the reader with 200", func(ctx context.Context) (bool, string, error) {
				code, body := getWithToken(ctx, url, reader)
				return code == http.StatusOK, fmt.Sprintf("%d %.200s", code, body), nil
			})
			if code, body := getWithToken(context.Background(), url, stranger); code != http.StatusForbidden {
				t.Errorf("/metrics answered a ServiceAccount without the metrics-reader role with %d %q, want 403", code, body)
			}
			// Only the Lease, which the test put out of reach, was refused.
			for _, line := range strings.Split(op.Log(), "\n") {
				if strings.Contains(line, "forbidden") && !strings.Contains(line, "leases") {
					t.Errorf("a request other than the Lease's was forbidden: %s", line)
				}
			}
			return ctx
		}).
		Feature()
}

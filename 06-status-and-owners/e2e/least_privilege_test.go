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
// what the code never needs, such as Secrets, or ConfigMaps outside its
// ledger, and that the API server answers every row of docs/reliability.md's
// table of the account's permissions as the table says.
func TestLeastPrivilege(t *testing.T) {
	c, err := harness.NewClients(harness.Env().EnvConf().Client().RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	sa := newOperatorAccount(t, c)

	t.Run("the behaviour suite passes with only the generated ClusterRole", func(t *testing.T) {
		s := stage
		// The fixture passes the admin kubeconfig first; Go's flag package
		// keeps the last value of a flag, so this one wins. The ledger is
		// the account's own namespace, where its ledger Role is bound.
		s.Args = append([]string{"--kubeconfig", sa.kubeconfig, "--ledger-namespace", sa.namespace}, stage.Args...)
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

	t.Run("the API server answers every row of docs/reliability.md as it says", func(t *testing.T) {
		rows := documentedPermissions(t)
		for _, r := range rows {
			for _, verb := range r.verbs {
				if got := allowed(t, c, sa, verb, r.group, r.resource, r.namespace(sa)); got != r.allowed {
					t.Errorf("docs/reliability.md says %s %s in %s: allowed=%v; the API server answers %v", verb, r.cell, r.where, r.allowed, got)
				}
			}
		}
		t.Logf("%d rows of docs/reliability.md checked", len(rows))
	})

	t.Run("it cannot read Secrets, nor ConfigMaps outside its ledger", func(t *testing.T) {
		for _, verb := range []string{"get", "list", "watch"} {
			for _, ns := range []string{sa.namespace, ""} { // its own namespace, and cluster-wide
				if allowed(t, c, sa, verb, "", "secrets", ns) {
					t.Errorf("the operator's account may %s secrets in namespace %q", verb, ns)
				}
			}
			// It reads and writes holds only in the ledger namespace.
			if !allowed(t, c, sa, verb, "", "configmaps", sa.namespace) || allowed(t, c, sa, verb, "", "configmaps", "") {
				t.Errorf("the account may %s ConfigMaps in its ledger namespace: %v, cluster-wide: %v; want true, false",
					verb, allowed(t, c, sa, verb, "", "configmaps", sa.namespace), allowed(t, c, sa, verb, "", "configmaps", ""))
			}
		}
		if !allowed(t, c, sa, "create", "", "configmaps", sa.namespace) || allowed(t, c, sa, "create", "", "configmaps", "default") {
			t.Errorf("the account may create ConfigMaps in its ledger namespace: %v, in default: %v; want true, false",
				allowed(t, c, sa, "create", "", "configmaps", sa.namespace), allowed(t, c, sa, "create", "", "configmaps", "default"))
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
		cr, roles := generatedRoles(t)
		granted := append([]rbacv1.PolicyRule{}, cr.Rules...)
		for _, r := range roles {
			granted = append(granted, r.Rules...)
		}
		for _, extra := range beyondRoles(list, granted) {
			t.Errorf("kubectl auth can-i --list shows a permission the generated roles do not grant: %s", extra)
		}
	})
}

// operatorAccount is a ServiceAccount bound to copies of the generated roles,
// and a kubeconfig that authenticates as it. Its namespace is also where
// its leader-election Lease and its seat ledger live.
type operatorAccount struct {
	namespace, name string
	kubeconfig      string
}

// newOperatorAccount creates the ServiceAccount, binds it to the generated
// ClusterRole (cluster-wide, because the behaviour suite makes a namespace per
// check) and to the generated leader-election and ledger Roles (in its own
// namespace), and writes a kubeconfig with a token for it. The roles are copies under
// names of this test's own, so that nothing shared in the cluster changes,
// and they are deleted when the test ends.
func newOperatorAccount(t *testing.T, c *harness.Clients) *operatorAccount {
	t.Helper()
	ctx := context.Background()
	sa := &operatorAccount{namespace: c.Namespace(t, "least-privilege"), name: "operator"}
	cr, roles := generatedRoles(t)
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

	for _, role := range roles {
		role.ObjectMeta = metav1.ObjectMeta{Name: role.Name, Namespace: sa.namespace}
		must(c.Kube.RbacV1().Roles(sa.namespace).Create(ctx, role, metav1.CreateOptions{}))
		must(c.Kube.RbacV1().RoleBindings(sa.namespace).Create(ctx, roleBinding(sa, role.Name), metav1.CreateOptions{}))
	}

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

// roleBinding binds the Role called role, in the account's namespace, to
// the account.
func roleBinding(sa *operatorAccount, role string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: sa.namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.name, Namespace: sa.namespace}},
	}
}

// generatedRoles reads the ClusterRole and the Roles (leader election,
// ledger) from config/rbac/role.yaml, exactly as controller-gen wrote them.
func generatedRoles(t *testing.T) (*rbacv1.ClusterRole, []*rbacv1.Role) {
	t.Helper()
	objs, err := harness.ReadObjects(harness.RepoPath("06-status-and-owners", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cr *rbacv1.ClusterRole
	var roles []*rbacv1.Role
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			cr = &rbacv1.ClusterRole{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, cr)
		case "Role":
			role := &rbacv1.Role{}
			err = runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role)
			roles = append(roles, role)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if cr == nil || len(roles) != 2 {
		t.Fatal("config/rbac/role.yaml lacks the ClusterRole or one of the two Roles; run make manifests-06")
	}
	return cr, roles
}

// readClusterRole reads one of the ClusterRoles in config/rbac/<file>.
func readClusterRole(t *testing.T, file string) *rbacv1.ClusterRole {
	t.Helper()
	objs, err := harness.ReadObjects(harness.RepoPath("06-status-and-owners", "config", "rbac", file))
	if err != nil || len(objs) != 1 || objs[0].GetKind() != "ClusterRole" {
		t.Fatalf("config/rbac/%s: want one ClusterRole (err %v)", file, err)
	}
	cr := &rbacv1.ClusterRole{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, cr); err != nil {
		t.Fatal(err)
	}
	return cr
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
// the account's namespace (also its ledger): it must take the Lease, record
// its Event, book a ticket (a seat hold, an Event, a status write) and
// reconcile, with no request forbidden.
func leaderElectionAs(sa *operatorAccount) features.Feature {
	return features.New("leader election as the operator's account").
		Assess("the operator takes the Lease, books a ticket and is refused nothing", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			c, err := harness.NewClients(cfg.Client().RESTConfig())
			if err != nil {
				t.Fatal(err)
			}
			bin := harness.BuildOperator(t, harness.OperatorPackage(stage.Package))
			behaviour.ReleaseTicketsAtCleanup(t, c, sa.namespace, cfg.KubeconfigFile(), bin, stage.Args...)
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
// ns ("" for cluster-wide).
func allowed(t *testing.T, c *harness.Clients, sa *operatorAccount, verb, group, resource, ns string) bool {
	t.Helper()
	user := fmt.Sprintf("system:serviceaccount:%s:%s", sa.namespace, sa.name)
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.namespace, "system:authenticated"}
	ok, err := mayDo(context.Background(), c, user, groups, verb, group, resource, ns)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// mayDo asks the API server, with a SubjectAccessReview, whether user (a
// member of groups) may do verb on resource ("loggers", or with a
// subresource "loggers/status") in ns ("" for cluster-wide).
func mayDo(ctx context.Context, c *harness.Clients, user string, groups []string, verb, group, resource, ns string) (bool, error) {
	resource, sub, _ := strings.Cut(resource, "/")
	sar, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: verb, Group: group, Resource: resource, Subresource: sub,
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
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
				"--namespace", sa.namespace, "--ledger-namespace", sa.namespace, "--leader-elect", "--leader-elect-namespace", "default",
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

// permission is one row of the table "What the operator's account can do"
// in docs/reliability.md.
type permission struct {
	verbs           []string
	cell            string // the resource as written: configmaps, loggers.example.com/status
	group, resource string // resource may end in /subresource
	where           string // "every namespace", "its own namespace" or "another namespace"
	allowed         bool
}

// namespace is where the row asks, for the account sa: its own namespace
// (where its Roles are bound), default, or all namespaces ("").
func (p permission) namespace(sa *operatorAccount) string {
	switch p.where {
	case "its own namespace":
		return sa.namespace
	case "another namespace":
		return "default"
	}
	return ""
}

// documentedPermissions reads the table. A row it cannot read fails the
// test, so the table cannot drift into a shape nobody checks.
func documentedPermissions(t *testing.T) []permission {
	t.Helper()
	b, err := os.ReadFile(harness.RepoPath("docs", "reliability.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## What the operator's account can do\n")
	if !ok {
		t.Fatal(`docs/reliability.md has no section "What the operator's account can do"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []permission
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if !strings.HasPrefix(line, "|") || cells[0] == "verbs" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		if len(cells) < 4 || (cells[3] != "yes" && cells[3] != "no") ||
			!slices.Contains([]string{"every namespace", "its own namespace", "another namespace"}, cells[2]) {
			t.Fatalf("docs/reliability.md: cannot read the row %q (want: verbs | resource | every/its own/another namespace | yes or no | why)", line)
		}
		p := permission{cell: strings.Trim(cells[1], "`"), where: cells[2], allowed: cells[3] == "yes"}
		name, sub, _ := strings.Cut(p.cell, "/")
		p.resource, p.group, _ = strings.Cut(name, ".")
		if sub != "" {
			p.resource += "/" + sub
		}
		for _, v := range strings.Split(cells[0], ",") {
			p.verbs = append(p.verbs, strings.TrimSpace(v))
		}
		rows = append(rows, p)
	}
	if len(rows) == 0 {
		t.Fatal("docs/reliability.md: the table of the account's permissions has no rows")
	}
	return rows
}

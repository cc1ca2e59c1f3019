package e2e

import (
	"context"

	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/operator-flow/operator-flow/harness"
)

// orderCluster is the CLUSTER_NAME of TestAnyLabAfterAnyLab: a cluster of
// its own, as labCluster is TestLabTargets'.
const orderCluster = "labs-order"

// TestAnyLabAfterAnyLab runs labs, day-two modules included, in an order
// the workshop does not: each must converge on what the one before left.
// The pairs it covers: A3 → lab-stop → 6 (A3's teardown takes the Logger
// v2 away; the Deployments its operator made name a Logger example.com/v2
// as their owner), A3 → 6 without the stop, 6 → A2, A2 → 1 (A2's Fail
// webhooks must be gone), 1 → A1 and A1 → A3 (A1's policies must be gone).
func TestAnyLabAfterAnyLab(t *testing.T) {
	t.Cleanup(func() { labClusterDown(t, orderCluster) })
	began := time.Now()
	previous := "a fresh cluster"
	for _, target := range []string{"lab-A3", "lab-stop", "lab-6", "lab-A2", "lab-1", "lab-A1", "lab-A3", "lab-6", "lab-A2"} {
		out, err := makeTarget(t, orderCluster, target)
		if err != nil {
			t.Fatalf("make %s after %s: %v\n%s", target, previous, err, lastLines(out, 30))
		}
		if target != "lab-stop" {
			id := strings.TrimPrefix(target, "lab-")
			if !strings.Contains(out, "read on: labs/") {
				t.Errorf("make %s after %s did not get to the end:\n%s", target, previous, lastLines(out, 20))
			}
			if id != "1" {
				ownedByTheLoggers(t, target, previous)
			}
			// Module A1's policies are there during lab A1 only: the next
			// lab's teardown deletes them by the label lab A1 gave them.
			policies := strings.Fields(kubectlOn(t, orderCluster, "get", "validatingadmissionpolicies,mutatingadmissionpolicies,validatingadmissionpolicybindings,mutatingadmissionpolicybindings", "-o", "name"))
			if id == "A1" && len(policies) == 0 {
				t.Errorf("make lab-A1 installed no admission policy")
			}
			if id != "A1" && len(policies) != 0 {
				t.Errorf("after make %s (after %s), these admission policies are left: %v", target, previous, policies)
			}
		}
		previous = "make " + target
	}
	t.Logf("the labs in that order took %s", time.Since(began).Round(time.Second))
}

// ownedByTheLoggers checks that every Deployment in namespace lab is
// controlled by the Logger of its name that exists now, and that there is
// one for each sample Logger: what the lab's operator converged to.
func ownedByTheLoggers(t *testing.T, target, previous string) {
	t.Helper()
	loggers := kubectlOn(t, orderCluster, "-n", "lab", "get", "loggers", "-o", `jsonpath={range .items[*]}{.metadata.name}{" "}{.metadata.uid}{"\n"}{end}`)
	deployments := kubectlOn(t, orderCluster, "-n", "lab", "get", "deployments", "-o", `jsonpath={range .items[*]}{.metadata.name}{" "}{.metadata.ownerReferences[?(@.controller==true)].uid}{"\n"}{end}`)
	owner := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(deployments), "\n") {
		if f := strings.Fields(line); len(f) == 2 {
			owner[f[0]] = f[1]
		} else if len(f) == 1 {
			owner[f[0]] = "(none)"
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(loggers), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if got := owner["logger-"+f[0]]; got != f[1] {
			t.Errorf("after make %s (after %s), Deployment logger-%s is controlled by %q, not by the Logger %s (uid %s):\nLoggers:\n%s\nDeployments and their controllers:\n%s",
				target, previous, f[0], got, f[0], f[1], loggers, deployments)
		}
	}
}

// kubectlOn runs ./bin/kubectl against cluster and returns its output.
func kubectlOn(t *testing.T, cluster string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kc := exec.CommandContext(ctx, harness.RepoPath("cluster", "cluster.sh"), "kubeconfig")
	kc.Env = clusterEnv(cluster)
	path, err := kc.Output()
	if err != nil {
		t.Fatalf("cluster.sh kubeconfig: %v", err)
	}
	cmd := exec.CommandContext(ctx, harness.RepoPath("bin", "kubectl"), append([]string{"--kubeconfig", strings.TrimSpace(string(path))}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

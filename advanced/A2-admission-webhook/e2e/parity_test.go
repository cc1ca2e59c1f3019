package e2e

import (
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"github.com/operator-flow/operator-flow/harness"
	"github.com/operator-flow/operator-flow/harness/admission"
)

// TestParity runs every case of harness/admission twice in one run: in one
// namespace through A1's policies (which the API server runs itself), in
// another through this module's webhook, and compares the verdicts and the
// stored team labels. The wording differs (a policy's message is its
// messageExpression, the webhook's a field error); both must say every
// part of the case's Says.
func TestParity(t *testing.T) {
	withCluster(t, "A1's policies and A2's webhook agree", func(t *testing.T, cfg *envconf.Config) {
		w := harness.NewWorld(t, cfg, "a2-parity-webhook", modulePackage)
		policyNS := w.C.Namespace(t, "a2-parity-policy")
		wh := installWebhook(t, w.C, w.NS, admissionregistrationv1.Fail)
		installPolicies(t, w.C, policyNS, policyNS)
		w.Start(t, append(append([]string{}, stage.Args[:2]...), wh.args...)...)
		waitAdmissionActive(t, w.C, w.NS)
		waitAdmissionActive(t, w.C, policyNS)
		for i, tc := range admission.Cases {
			name := fmt.Sprintf("case-%d", i)
			t.Run(tc.Name, func(t *testing.T) {
				byPolicy := runCase(t, w.C, policyNS, name, tc)
				byWebhook := runCase(t, w.C, w.NS, name, tc)
				t.Logf("policy:  %s", byPolicy)
				t.Logf("webhook: %s", byWebhook)
				if byPolicy.allowed != byWebhook.allowed || byPolicy.team != byWebhook.team {
					t.Errorf("the policy and the webhook disagree:\n  policy:  %s\n  webhook: %s", byPolicy, byWebhook)
				}
				checkCase(t, tc, byPolicy)
				checkCase(t, tc, byWebhook)
			})
		}
	})
}

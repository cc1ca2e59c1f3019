# Module A3's own targets. The root Makefile includes this file; `make
# generate`, `make manifests` and `make verify` run the targets added to the
# lists below, together with every stage's.

GENERATE_TARGETS += generate-A3
MANIFEST_TARGETS += manifests-A3
VERIFY_TARGETS   += verify-A3

.PHONY: generate-A3 manifests-A3 verify-A3 run-A3 lab-A3 lab-A3-down stored-A3

generate-A3: $(BIN)/controller-gen ## Module A3: DeepCopy methods from the Go types (controller-gen).
	@advanced/A3-api-versions/hack/generate.sh deepcopy

manifests-A3: $(BIN)/controller-gen $(BIN)/kubectl ## Module A3: CRDs (Logger v1 and v2), RBAC and webhook configurations from the kubebuilder markers (controller-gen).
	@advanced/A3-api-versions/hack/generate.sh manifests

verify-A3: $(BIN)/controller-gen $(BIN)/kubectl ## Module A3: fail when the generated code or manifests are stale.
	@advanced/A3-api-versions/hack/generate.sh verify

# run-A3 and lab-A3 are labs/lab.sh's run and lab plus what the webhooks
# need: a serving certificate, the CRDs with the conversion webhook, the
# admission configurations (hack/lab.sh).
run-A3: cluster ## Module A3: certificate, CRDs with the conversion webhook, admission configurations (namespace lab), the operator in the foreground.
	@advanced/A3-api-versions/hack/lab.sh run

lab-A3: cluster ## Module A3: Loggers stored as v1 (A2's CRD), the upgrade to v1 and v2, then make lab-N for A3 (namespace lab).
	@advanced/A3-api-versions/hack/lab.sh lab

lab-A3-down: ## Module A3: delete the admission configurations and the Logger CRD, every Logger with it (make lab-stop runs it).
	@advanced/A3-api-versions/hack/lab.sh down

stored-A3: ## Module A3: the version each Logger is stored in, read from etcd (NS=namespace, default every one).
	@KUBECONFIG=$$(cluster/cluster.sh kubeconfig) go run ./advanced/A3-api-versions/hack/stored-versions $(if $(NS),--namespace $(NS))

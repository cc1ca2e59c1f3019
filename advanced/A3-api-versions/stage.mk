# Module A2's own targets. The root Makefile includes this file; `make
# generate`, `make manifests` and `make verify` run the targets added to the
# lists below, together with every stage's.

GENERATE_TARGETS += generate-A3
MANIFEST_TARGETS += manifests-A3
VERIFY_TARGETS   += verify-A3

.PHONY: generate-A3 manifests-A3 verify-A3 bench-admission run-A3 lab-A3 webhook-A3-down

generate-A3: $(BIN)/controller-gen ## Module A2: DeepCopy methods from the Go types (controller-gen).
	@advanced/A3-api-versions/hack/generate.sh deepcopy

manifests-A3: $(BIN)/controller-gen $(BIN)/kubectl ## Module A2: CRDs, RBAC and webhook configurations from the kubebuilder markers (controller-gen).
	@advanced/A3-api-versions/hack/generate.sh manifests

verify-A3: $(BIN)/controller-gen $(BIN)/kubectl ## Module A2: fail when the generated code or manifests are stale.
	@advanced/A3-api-versions/hack/generate.sh verify

# run-A3 and lab-A3 are labs/lab.sh's run and lab plus what a webhook needs:
# a serving certificate and the webhook configurations (hack/lab.sh).
run-A3: cluster ## Module A2: CRDs, certificate and webhook configurations for namespace lab, the operator in the foreground.
	@advanced/A3-api-versions/hack/lab.sh run

lab-A3: cluster ## Module A2: make lab-N for A2, with the webhook's certificate and configurations (namespace lab).
	@advanced/A3-api-versions/hack/lab.sh lab

webhook-A3-down: ## Module A2: delete the webhook configurations (after make lab-stop, before another stage's lab).
	@advanced/A3-api-versions/hack/lab.sh down

ADMISSION_N ?= 1000
bench-admission: $(CLUSTER_TOOLS) ## Latency of a Logger create: no admission, A1's policies, A2's webhook (ADMISSION_N=1000 dry-run creates each); bench/results/admission/.
	@cluster/with-cluster.sh env ADMISSION_BENCH_N=$(ADMISSION_N) ADMISSION_BENCH_OUT=$(ROOT)/bench/results/admission \
		go test -count=1 -v -timeout 20m -run '^TestAdmissionLatency$$' ./advanced/A3-api-versions/e2e/

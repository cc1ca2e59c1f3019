# Stage 06's own targets. The root Makefile includes this file; `make
# generate`, `make manifests` and `make verify` run the targets added to the
# lists below, together with every other stage's.

GENERATE_TARGETS += generate-06
MANIFEST_TARGETS += manifests-06
VERIFY_TARGETS   += verify-06

.PHONY: generate-06 manifests-06 verify-06 deploy-6

generate-06: $(BIN)/controller-gen ## Stage 06: DeepCopy methods from the Go types (controller-gen).
	@06-status-and-owners/hack/generate.sh deepcopy

manifests-06: $(BIN)/controller-gen $(BIN)/kubectl ## Stage 06: CRDs and RBAC from the kubebuilder markers (controller-gen).
	@06-status-and-owners/hack/generate.sh manifests

verify-06: $(BIN)/controller-gen $(BIN)/kubectl ## Stage 06: fail when the generated code or manifests are stale.
	@06-status-and-owners/hack/generate.sh verify

deploy-6: ## Stage 06 in-cluster: CLUSTER=kind builds the image, loads it, applies config/default.
	@06-status-and-owners/hack/deploy.sh

# Stage 05's own targets. The root Makefile includes this file; `make
# generate`, `make manifests` and `make verify` run the targets added to the
# lists below, together with every other stage's.

GENERATE_TARGETS += generate-05
MANIFEST_TARGETS += manifests-05
VERIFY_TARGETS   += verify-05

.PHONY: generate-05 manifests-05 verify-05 deploy-5

generate-05: $(BIN)/controller-gen ## Stage 05: DeepCopy methods from the Go types (controller-gen).
	@05-controller-runtime/hack/generate.sh deepcopy

manifests-05: $(BIN)/controller-gen $(BIN)/kubectl ## Stage 05: CRDs and RBAC from the kubebuilder markers (controller-gen).
	@05-controller-runtime/hack/generate.sh manifests

verify-05: $(BIN)/controller-gen $(BIN)/kubectl ## Stage 05: fail when the generated code or manifests are stale.
	@05-controller-runtime/hack/generate.sh verify

deploy-5: ## Stage 05 in-cluster: CLUSTER=kind builds the image, loads it, applies config/default.
	@05-controller-runtime/hack/deploy.sh

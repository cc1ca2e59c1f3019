# Stage 04's own targets: the code generated from its API types (deepcopy,
# clientset, listers, informers). `make generate` and `make verify` run them.

GENERATE_TARGETS += generate-04
VERIFY_TARGETS   += verify-04

.PHONY: generate-04
generate-04: ## Regenerate stage 04's deepcopy functions, clientset, listers and informers.
	@04-workqueue/hack/update-codegen.sh

.PHONY: verify-04
verify-04: ## Fail when stage 04's generated code is stale.
	@04-workqueue/hack/verify-codegen.sh

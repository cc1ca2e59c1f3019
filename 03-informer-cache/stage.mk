# Stage 03's own targets: the code generated from its API types (deepcopy,
# clientset, listers, informers). `make generate` and `make verify` run them.

GENERATE_TARGETS += generate-03
VERIFY_TARGETS   += verify-03

.PHONY: generate-03
generate-03: ## Regenerate stage 03's deepcopy functions, clientset, listers and informers.
	@03-informer-cache/hack/update-codegen.sh

.PHONY: verify-03
verify-03: ## Fail when stage 03's generated code is stale.
	@03-informer-cache/hack/verify-codegen.sh

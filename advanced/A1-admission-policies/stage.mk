# Module A1's own targets. The root Makefile includes this file; `make
# manifests` and `make verify` run the targets added to the lists below.

MANIFEST_TARGETS += manifests-A1
VERIFY_TARGETS   += verify-A1

.PHONY: manifests-A1 verify-A1

manifests-A1: $(BIN)/kubectl ## Module A1: stage 06's CRDs with timeInterval's minimum raised to 5 (a JSON patch).
	@advanced/A1-admission-policies/hack/generate.sh manifests

verify-A1: $(BIN)/kubectl ## Module A1: fail when its CRDs are stale.
	@advanced/A1-admission-policies/hack/generate.sh verify

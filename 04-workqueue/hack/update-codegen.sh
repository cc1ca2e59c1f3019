#!/usr/bin/env bash
# update-codegen.sh [ROOT]: regenerate stage 04's Go code from its API types.
#
#   api/<group>/v1/zz_generated.deepcopy.go   DeepCopy functions (deepcopy-gen)
#   generated/clientset/versioned/            typed clientset    (client-gen)
#   generated/listers/<group>/v1/             listers            (lister-gen)
#   generated/informers/externalversions/     informers          (informer-gen)
#
# It runs kube_codegen.sh from k8s.io/code-generator, at the version the root
# go.mod pins (a `tool` dependency), straight from the Go module cache. ROOT
# is the repository to generate in (default: this one); verify-codegen.sh
# points it at a scratch copy.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "${1:-$HERE/../..}" && pwd)
STAGE=04-workqueue
MODULE=github.com/operator-flow/operator-flow

cd "$ROOT"
CODEGEN_DIR=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
CODEGEN_VERSION=$(go list -m -f '{{.Version}}' k8s.io/code-generator)
if [[ -z $CODEGEN_DIR ]]; then
	go mod download k8s.io/code-generator
	CODEGEN_DIR=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
fi

# kube_codegen.sh `go install`s the generators into $GOBIN. Keep them in the
# repository's ignored ./bin, one folder per version, not in ~/go/bin.
export GOBIN="$HERE/../../bin/code-generator-$CODEGEN_VERSION"
mkdir -p "$GOBIN"
GOBIN=$(cd "$GOBIN" && pwd)

# shellcheck source=/dev/null
source "$CODEGEN_DIR/kube_codegen.sh"

kube::codegen::gen_helpers \
	--boilerplate "$HERE/boilerplate.go.txt" \
	"$STAGE/api"

kube::codegen::gen_client \
	--with-watch \
	--output-dir "$STAGE/generated" \
	--output-pkg "$MODULE/$STAGE/generated" \
	--boilerplate "$HERE/boilerplate.go.txt" \
	"$STAGE/api"

#!/usr/bin/env bash
# deploy.sh: what `make deploy-6` runs. It puts stage 06 inside a cluster,
# the way an operator is shipped: an image, a ServiceAccount bound to the
# generated RBAC, and a Deployment, in a namespace that enforces the Pod
# Security "restricted" profile.
#
#   CLUSTER=kind   build the image (Dockerfile), load it into the kind
#                  cluster (created or reused by cluster/cluster.sh), install
#                  the CRDs and apply config/default with kustomize
#   CLUSTER=kwok   (the default) explain why not: kwok simulates pods, it
#                  runs no containers, so the operator runs out of cluster
#                  there (make run-6, make lab-6)
#
# Seams for tests: DOCKER, KIND_BIN and KUBECTL name the commands to run.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STAGE=06-status-and-owners
BIN="$ROOT/bin"
DOCKER=${DOCKER:-docker}
export KIND_BIN=${KIND_BIN:-$BIN/kind}
KUBECTL=${KUBECTL:-$BIN/kubectl}
NAME=${CLUSTER_NAME:-operator-flow}
# config/manager/kustomization.yaml names this image; keep them together.
IMAGE=operator-flow-06:dev

say() { printf '>> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# docker_ready fails within seconds when no Docker engine answers, instead
# of hanging in docker build; cluster/cluster.sh words the message.
docker_ready() {
	DOCKER="$DOCKER" DOCKER_NEEDED_BY="make deploy-6 CLUSTER=kind" \
		DOCKER_INSTEAD="run the operator out of cluster on the default embedded cluster: make run-6 (or make lab-6)" \
		"$ROOT/cluster/cluster.sh" docker-check
}

# build_image compiles the operator here, static (CGO_ENABLED=0) for the
# engine's architecture, and sends the engine a context of just that binary
# and the Dockerfile. The image is FROM scratch, so nothing is pulled: it
# builds where no registry can be reached, and the engine never sees the
# source, ./bin or .state.
build_image() {
	ctx=$(mktemp -d) # global: the EXIT trap still needs it
	trap 'rm -rf "$ctx"' EXIT
	local arch
	arch=$("$DOCKER" version --format '{{.Server.Arch}}')
	say "building ./$STAGE for linux/$arch"
	(cd "$ROOT" && CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -ldflags='-s -w' -o "$ctx/manager" "./$STAGE")
	cp "$ROOT/$STAGE/Dockerfile" "$ctx/"
	say "building image $IMAGE"
	"$DOCKER" build -t "$IMAGE" "$ctx"
}

deploy_kind() {
	docker_ready
	[[ -x $KIND_BIN ]] || die "$KIND_BIN is missing. Run 'make tools' first."
	CLUSTER=kind "$ROOT/cluster/cluster.sh" up
	local kubeconfig
	kubeconfig=$(CLUSTER=kind "$ROOT/cluster/cluster.sh" kubeconfig)
	build_image
	say "loading $IMAGE into kind cluster '$NAME'"
	"$KIND_BIN" load docker-image "$IMAGE" --name "$NAME"
	say "installing the CRDs ($STAGE/config/crd)"
	"$KUBECTL" --kubeconfig "$kubeconfig" apply --server-side -f "$ROOT/$STAGE/config/crd"
	"$KUBECTL" --kubeconfig "$kubeconfig" wait --for=condition=Established \
		crd/flighttickets.flights.com crd/loggers.example.com --timeout=60s
	say "applying $STAGE/config/default (namespace, ServiceAccount, RBAC, Deployment)"
	"$KUBECTL" --kubeconfig "$kubeconfig" apply --server-side -k "$ROOT/$STAGE/config/default"
	"$KUBECTL" --kubeconfig "$kubeconfig" -n operator-flow-system rollout status deployment/operator-flow-06 --timeout=120s
	say "deployed; its log: kubectl -n operator-flow-system logs deployment/operator-flow-06 -f"
}

case "${CLUSTER:-kwok}" in
kind) deploy_kind ;;
kwok)
	cat >&2 <<-MSG
	make deploy-6 runs the operator inside the cluster, which needs a cluster
	that runs containers: use CLUSTER=kind (needs Docker).
	The default embedded cluster (kwok) only simulates pods: nothing would
	execute the operator's image. There the operator runs out of cluster,
	as a process on this machine:
	  make run-6    CRDs installed, operator in the foreground
	  make lab-6    operator in the background, samples applied
	Nothing was deployed.
	MSG
	exit 1
	;;
*) die "CLUSTER=$CLUSTER is not known; use CLUSTER=kind (needs Docker) or the default kwok" ;;
esac

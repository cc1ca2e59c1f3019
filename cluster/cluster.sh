#!/usr/bin/env bash
# cluster.sh: start, stop and describe the workshop cluster.
#
#   cluster.sh up      start the cluster, or reuse the one already running
#   cluster.sh down    stop it and remove its state; nothing keeps running
#   cluster.sh env     print the exports for `eval $(make env)`
#   cluster.sh status  say whether a cluster is running
#   cluster.sh kubeconfig  print the kubeconfig path
#
# CLUSTER=kwok (the default) runs a real control plane (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler) plus kwok-controller, which plays
# kubelet for a simulated node, as plain processes from ./bin. No Docker, no
# downloads. CLUSTER=kind creates a kind cluster instead, for machines with a
# Docker engine.
#
# Everything lives under .state/ in the repository (git ignores it):
# .state/kubeconfig is the only kubeconfig written; ~/.kube/config is never
# touched.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN="$ROOT/bin"
STATE="$ROOT/.state"
NAME="${CLUSTER_NAME:-operator-flow}"
# CLUSTER_NAME gives a second cluster files of its own (the scripts' own tests
# use that); the workshop cluster's kubeconfig is .state/kubeconfig.
SUFFIX="${CLUSTER_NAME:+-$CLUSTER_NAME}"
KUBECONFIG_FILE="$STATE/kubeconfig$SUFFIX"
# Which kind of cluster the last `up` made, so that `down` needs no CLUSTER=.
KIND_FILE="$STATE/cluster-type$SUFFIX"

# kwokctl keeps its clusters, logs and pid files in KWOK_WORKDIR. It also
# needs kubectl on PATH, which ./bin provides.
export KWOK_WORKDIR="$STATE/kwok"
export PATH="$BIN:$PATH"

say() { printf '>> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

need_bin() {
	local b
	for b in "$@"; do
		[[ -x "$BIN/$b" ]] || die "$BIN/$b is missing. Run 'make tools' first (it builds the pinned binaries once)."
	done
}

kubectl_() { "$BIN/kubectl" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

# api_ready succeeds when the API server behind .state/kubeconfig answers /readyz.
api_ready() {
	[[ -s "$KUBECONFIG_FILE" ]] && kubectl_ get --raw /readyz --request-timeout=3s >/dev/null 2>&1
}

# ---------------------------------------------------------------- kwok ----

# kwokctl logs one JSON line per step; keep them in a file and show them only
# when something fails.
KWOKCTL_LOG="$STATE/kwokctl.log"
kwokctl_() {
	if ! "$BIN/kwokctl" "$@" >>"$KWOKCTL_LOG" 2>&1; then
		tail -n 20 "$KWOKCTL_LOG" >&2
		die "kwokctl $1 $2 failed (full log: ${KWOKCTL_LOG#"$ROOT"/}; component logs: ${KWOK_WORKDIR#"$ROOT"/}/clusters/$NAME/logs/)"
	fi
}

# has_cluster NAME LISTER...: whether LISTER (one cluster name a line) lists
# NAME. The list is read whole before grep looks at it: with pipefail, a
# `lister | grep -q` fails whenever grep exits at its match before the lister
# has written its last line (SIGPIPE). `make cluster-down` once left a
# running cluster behind that way.
has_cluster() {
	local name=$1 names
	shift
	names=$("$@" 2>/dev/null) || return 1
	grep -qx "$name" <<<"$names"
}

kwok_exists() { has_cluster "$NAME" "$BIN/kwokctl" get clusters; }

kwok_up() {
	need_bin kwokctl kwok kube-apiserver kube-controller-manager kube-scheduler kubectl etcd
	# kwokctl's binary runtime reads these instead of downloading releases.
	export KWOK_KUBE_APISERVER_BINARY="$BIN/kube-apiserver"
	export KWOK_KUBE_CONTROLLER_MANAGER_BINARY="$BIN/kube-controller-manager"
	export KWOK_KUBE_SCHEDULER_BINARY="$BIN/kube-scheduler"
	export KWOK_KUBECTL_BINARY="$BIN/kubectl"
	export KWOK_ETCD_BINARY="$BIN/etcd"
	export KWOK_CONTROLLER_BINARY="$BIN/kwok"

	local start=$SECONDS
	if kwok_exists; then
		if api_ready; then
			say "reusing the running kwok cluster '$NAME' (kubeconfig: ${KUBECONFIG_FILE#"$ROOT"/})"
			return 0
		fi
		# The cluster's files exist but its processes are gone (a reboot, or
		# they were killed): start them again from the same data.
		say "kwok cluster '$NAME' exists but is stopped; starting its processes"
		kwokctl_ start cluster --name "$NAME" --wait 60s
	else
		say "creating kwok cluster '$NAME' from ./bin (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok-controller)"
		kwokctl_ create cluster --name "$NAME" \
			--config "$ROOT/cluster/kwokctl.yaml" \
			--kubeconfig "$KUBECONFIG_FILE" \
			--wait 60s
	fi
	"$BIN/kwokctl" get kubeconfig --name "$NAME" >"$KUBECONFIG_FILE.tmp"
	mv "$KUBECONFIG_FILE.tmp" "$KUBECONFIG_FILE"

	# A node for pods to land on: kwok-controller makes it Ready.
	kubectl_ apply -f "$ROOT/cluster/node.yaml" >/dev/null
	kubectl_ wait --for=condition=Ready node/kwok-node-0 --timeout=60s >/dev/null ||
		die "the simulated node did not become Ready; see $KWOK_WORKDIR/clusters/$NAME/logs/kwok-controller.log"
	echo kwok >"$KIND_FILE"
	say "cluster '$NAME' ready in $((SECONDS - start))s; kubeconfig: ${KUBECONFIG_FILE#"$ROOT"/} (run: eval \$(make env))"
}

kwok_down() {
	if [[ -x "$BIN/kwokctl" ]] && kwok_exists; then
		say "deleting kwok cluster '$NAME' (stops its processes, removes its data)"
		kwokctl_ delete cluster --name "$NAME"
	else
		say "no kwok cluster '$NAME' to delete"
	fi
}

# ---------------------------------------------------------------- kind ----

# docker_ready fails within seconds when no Docker engine answers, so that
# CLUSTER=kind says so at once instead of hanging inside kind.
docker_ready() {
	command -v docker >/dev/null 2>&1 ||
		die "CLUSTER=kind needs Docker, and no 'docker' command is on PATH. Install Docker, or use the default embedded cluster: make cluster"
	local out
	if ! out=$(timeout 10 docker info --format '{{.ServerVersion}}' 2>&1); then
		die "CLUSTER=kind needs a running Docker engine, and none answered ('docker info': $(echo "$out" | tail -n1)). Start Docker, or use the default embedded cluster: make cluster"
	fi
}

# KIND_BIN lets the tests put a stand-in kind in place of ./bin/kind.
KIND_BIN="${KIND_BIN:-$BIN/kind}"

kind_up() {
	[[ -x $KIND_BIN ]] || die "$KIND_BIN is missing. Run 'make tools' first."
	docker_ready
	local start=$SECONDS
	if has_cluster "$NAME" "$KIND_BIN" get clusters; then
		say "reusing kind cluster '$NAME'"
		"$KIND_BIN" export kubeconfig --name "$NAME" --kubeconfig "$KUBECONFIG_FILE" >/dev/null
	else
		say "creating kind cluster '$NAME'"
		"$KIND_BIN" create cluster --name "$NAME" --kubeconfig "$KUBECONFIG_FILE" --wait 120s
	fi
	echo kind >"$KIND_FILE"
	say "cluster '$NAME' ready in $((SECONDS - start))s; kubeconfig: ${KUBECONFIG_FILE#"$ROOT"/} (run: eval \$(make env))"
}

kind_down() {
	docker_ready
	say "deleting kind cluster '$NAME'"
	"$KIND_BIN" delete cluster --name "$NAME" --kubeconfig "$KUBECONFIG_FILE"
}

# ---------------------------------------------------------------- main ----

mkdir -p "$STATE"
cmd="${1:-}"
case "$cmd" in
up)
	case "${CLUSTER:-kwok}" in
	kwok) kwok_up ;;
	kind) kind_up ;;
	*) die "CLUSTER=${CLUSTER} is not known; use CLUSTER=kwok (default, embedded) or CLUSTER=kind (needs Docker)" ;;
	esac
	;;
down)
	# Remove the cluster the last `up` made, whatever CLUSTER says now.
	case "$(cat "$KIND_FILE" 2>/dev/null || echo "${CLUSTER:-kwok}")" in
	kind) kind_down ;;
	*) kwok_down ;;
	esac
	rm -f "$KUBECONFIG_FILE" "$KIND_FILE"
	;;
env)
	echo "export KUBECONFIG='$KUBECONFIG_FILE'"
	echo "export PATH='$BIN':\"\$PATH\""
	;;
kubeconfig)
	echo "$KUBECONFIG_FILE"
	;;
status)
	if api_ready; then
		say "a cluster answers at $(kubectl_ config view --minify -o jsonpath='{.clusters[0].cluster.server}')"
	else
		say "no cluster is running (make cluster starts one)"
		exit 1
	fi
	;;
*)
	die "usage: cluster.sh up|down|env|status|kubeconfig"
	;;
esac

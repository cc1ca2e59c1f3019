#!/usr/bin/env bash
# cluster.sh: start, stop and describe the workshop cluster.
#
#   cluster.sh up      start the cluster, or reuse the one already running
#   cluster.sh down    stop it and remove its state; nothing keeps running
#   cluster.sh env     print the exports for `eval $(make env)`
#   cluster.sh status  say whether a cluster is running
#   cluster.sh kubeconfig  print the kubeconfig path
#   cluster.sh docker-check  fail within seconds unless a Docker engine answers
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
# .state holds the cluster's admin credentials: the kubeconfig embeds the
# admin client key, and kwokctl keeps its pki under .state/kwok. Everything
# this script and the tools it runs write is this account's only (umask),
# and .state too, also where another script or an older checkout made it
# with the usual 0755 (the chmod below).
umask 077

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN="$ROOT/bin"
STATE="$ROOT/.state"
NAME="${CLUSTER_NAME:-operator-flow}"
# CLUSTER_NAME gives a second cluster files of its own (the scripts' own tests
# use that); the workshop cluster's kubeconfig is .state/kubeconfig.
SUFFIX="${CLUSTER_NAME:+-$CLUSTER_NAME}"
KUBECONFIG_FILE="$STATE/kubeconfig$SUFFIX"
# Which kind of cluster the last `up` made, so that `down` needs no CLUSTER=
# and `up` refuses to start a second one of the other kind.
KIND_FILE="$STATE/cluster-type$SUFFIX"
# with-cluster.sh sets CREATED_FILE to learn whether `up` created the cluster
# (and so must remove it afterwards) or reused one that was there already.
CREATED_FILE="${CREATED_FILE:-}"

# kwokctl keeps its clusters, logs and pid files in KWOK_WORKDIR. It also
# needs kubectl on PATH, which ./bin provides.
export KWOK_WORKDIR="$STATE/kwok"
export PATH="$BIN:$PATH"

say() { printf '>> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# pin NAME: a version pinned in tools/versions.mk (its `NAME := value` line).
pin() { awk -v name="$1" '$1 == name && $2 == ":=" { print $3 }' "$ROOT/tools/versions.mk"; }

# created: tell with-cluster.sh that this `up` made a new cluster.
created() { [[ -z $CREATED_FILE ]] || echo 1 >"$CREATED_FILE"; }

# with_timeout SECONDS CMD...: CMD, stopped with SIGTERM after SECONDS.
# timeout(1) is GNU coreutils; macOS has none. The watcher's output goes to
# /dev/null so that a $(...) around this returns when CMD does, not when the
# watcher's sleep ends.
with_timeout() {
	local secs=$1 pid watcher rc=0
	shift
	"$@" &
	pid=$!
	(sleep "$secs" && kill -TERM "$pid") >/dev/null 2>&1 &
	watcher=$!
	wait "$pid" || rc=$?
	kill "$watcher" 2>/dev/null || true
	return "$rc"
}

need_bin() {
	local b
	for b in "$@"; do
		[[ -x "$BIN/$b" ]] || die "$BIN/$b is missing. Run 'make tools' first (it builds the pinned binaries once)."
	done
}

# KUBECTL lets the tests put a stand-in kubectl in place of ./bin/kubectl.
KUBECTL="${KUBECTL:-$BIN/kubectl}"
kubectl_() { "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

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
	# The API server's audit log, which `make trace-N` reads: kwokctl
	# copies the policy into the cluster's folder and writes the log to
	# $KWOK_WORKDIR/clusters/$NAME/logs/audit.log. (An environment variable,
	# as for the binaries: kwokctl.yaml cannot know where the repository is.)
	# CLUSTER_AUDIT=off makes a cluster without it, to measure what it costs
	# (docs/trace.md).
	if [[ ${CLUSTER_AUDIT:-on} != off ]]; then
		export KWOK_KUBE_AUDIT_POLICY="$ROOT/cluster/audit-policy.yaml"
	fi

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
		created
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

DOCKER="${DOCKER:-docker}"
# Who needs Docker and what to do instead, for docker_ready's message;
# deploy.sh sets both through `cluster.sh docker-check`.
DOCKER_NEEDED_BY="${DOCKER_NEEDED_BY:-CLUSTER=kind}"
DOCKER_INSTEAD="${DOCKER_INSTEAD:-use the default embedded cluster: make cluster}"

# docker_ready fails within seconds when no Docker engine answers, so that
# CLUSTER=kind says so at once instead of hanging inside kind. The Makefile
# runs it (cluster.sh docker-check) before it builds kind and kubectl.
docker_ready() {
	command -v "$DOCKER" >/dev/null 2>&1 ||
		die "$DOCKER_NEEDED_BY needs Docker, and no '$DOCKER' command is on PATH. Install Docker, or $DOCKER_INSTEAD"
	local out
	if ! out=$(with_timeout 10 "$DOCKER" info --format '{{.ServerVersion}}' 2>&1); then
		die "$DOCKER_NEEDED_BY needs a running Docker engine, and none answered ('docker info': $(echo "${out:-no answer within 10s}" | tail -n1)). Start Docker, or $DOCKER_INSTEAD"
	fi
}

# KIND_BIN lets the tests put a stand-in kind in place of ./bin/kind.
KIND_BIN="${KIND_BIN:-$BIN/kind}"
# The node image: kind's own default would be another Kubernetes minor.
KIND_NODE_IMAGE="${KIND_NODE_IMAGE:-$(pin KIND_NODE_IMAGE)}"

# node_image: the image kind makes its node from. The pinned kindest/node
# when it is here or can be pulled; else the one `make kind-image` built from
# source, said in one line; else none, and one line that says how to get one
# (kind itself would end in "failed to pull image", naming no way out).
node_image() {
	local source_image out mins=5
	source_image="operator-flow/kind-node:$(pin KUBE_VERSION)"
	if "$DOCKER" image inspect "$KIND_NODE_IMAGE" >/dev/null 2>&1; then
		echo "$KIND_NODE_IMAGE"
		return
	fi
	if "$DOCKER" image inspect "$source_image" >/dev/null 2>&1; then
		if with_timeout 120 "$DOCKER" pull -q "$KIND_NODE_IMAGE" >/dev/null 2>&1; then
			echo "$KIND_NODE_IMAGE"
		else
			say "${KIND_NODE_IMAGE%@*} cannot be pulled here; using $source_image, built from source by 'make kind-image'" >&2
			echo "$source_image"
		fi
		return
	fi
	# No timeout: this is the download kind would make, however long it takes.
	say "pulling ${KIND_NODE_IMAGE%@*} for kind's node (once)" >&2
	if ! out=$("$DOCKER" pull -q "$KIND_NODE_IMAGE" 2>&1); then
		out="no kind node image here, and ${KIND_NODE_IMAGE%@*} cannot be pulled ($(echo "$out" | tail -n1))"
		[[ $(uname -s) == Linux ]] ||
			die "$out: kind needs it, and only Linux builds one from source. Pull it where the registry answers, or use the default embedded cluster: make cluster"
		# node-image.sh also builds the control plane when `make tools` has not.
		[[ -x $BIN/kube-apiserver && -x $BIN/etcd ]] || mins=18
		die "$out: build one from source with 'make kind-image' (about $mins minutes, once), then run this again"
	fi
	echo "$KIND_NODE_IMAGE"
}

# kind_wait_ready: after a reuse, the API server must answer. `kind get
# clusters` also lists a stopped node (it reads `docker ps -a`): after a
# `docker stop` or an engine restart the node container is still there but
# nothing answers. Start it again and wait, or say what is wrong.
kind_wait_ready() {
	api_ready && return 0
	local node="$NAME-control-plane" deadline=$((SECONDS + 90))
	say "kind node '$node' is not answering; starting its container"
	"$DOCKER" start "$node" >/dev/null ||
		die "could not start the kind node container '$node'; remove the cluster with 'make cluster-down' and run 'CLUSTER=kind make cluster' again"
	until api_ready; do
		((SECONDS < deadline)) ||
			die "kind cluster '$NAME' did not answer within 90s of starting its node; see 'docker logs $node', or remove it with 'make cluster-down'"
		sleep 1
	done
}

kind_up() {
	docker_ready
	[[ -x $KIND_BIN ]] || die "$KIND_BIN is missing. Run 'make tools' first."
	local start=$SECONDS
	if has_cluster "$NAME" "$KIND_BIN" get clusters; then
		say "reusing kind cluster '$NAME'"
		"$KIND_BIN" export kubeconfig --name "$NAME" --kubeconfig "$KUBECONFIG_FILE" >/dev/null
		kind_wait_ready
	else
		local image
		image=$(node_image)
		say "creating kind cluster '$NAME' (node image ${image%@*})"
		# From the repository root: kind.yaml mounts the audit policy from
		# cluster/audit-policy.yaml, a path kind resolves from where it runs.
		cd "$ROOT"
		"$KIND_BIN" create cluster --name "$NAME" --kubeconfig "$KUBECONFIG_FILE" \
			--image "$image" --config "$ROOT/cluster/kind.yaml" --wait 120s
		created
	fi
	echo kind >"$KIND_FILE"
	say "cluster '$NAME' ready in $((SECONDS - start))s; kubeconfig: ${KUBECONFIG_FILE#"$ROOT"/} (run: eval \$(make env))"
}

kind_down() {
	docker_ready
	[[ -x $KIND_BIN ]] || die "$KIND_BIN is missing. Run 'make tools' first."
	say "deleting kind cluster '$NAME'"
	"$KIND_BIN" delete cluster --name "$NAME" --kubeconfig "$KUBECONFIG_FILE"
}

# check_type WANT: refuse to start a cluster of one kind while the last `up`
# made one of the other kind and no `down` removed it. Without this, kind
# would merge its context into the kwok cluster's kubeconfig, the tests would
# silently run on whichever answered, and `down` would remove only one.
check_type() {
	local have
	have=$(cat "$KIND_FILE" 2>/dev/null) || return 0
	[[ -z $have || $have == "$1" ]] && return 0
	die "CLUSTER=$1 asks for a $1 cluster, but 'make cluster' made a $have cluster here that is not removed yet (${KIND_FILE#"$ROOT"/}). Remove it first with 'make cluster-down', or keep using it with CLUSTER=$have"
}

# ---------------------------------------------------------------- main ----

mkdir -p "$STATE" && chmod 700 "$STATE"
cmd="${1:-}"
case "$cmd" in
up)
	case "${CLUSTER:-kwok}" in
	kwok) check_type kwok && kwok_up ;;
	kind) check_type kind && kind_up ;;
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
docker-check)
	docker_ready
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
	die "usage: cluster.sh up|down|env|status|kubeconfig|docker-check"
	;;
esac

#!/usr/bin/env bash
# suite.sh: the kind suite, what `make test-kind` runs (and .ci/run after
# `make test`, when a Docker engine answers). Everything that needs pods that
# really run, on one kind cluster:
#
#   1. every stage's e2e tests (01 to 05 with go test; 06 through
#      `make check-6` on the reference stage, which runs the same tests and
#      says what works), then the day-two modules' (advanced/); the Logger
#      test reads its pods' output there
#   2. make lab-1 ... make lab-6, make lab-A1, make lab-A2, make lab-A3
#   3. make deploy-5, make deploy-6: the operator as an image in a namespace
#      that enforces Pod Security "restricted", running as its ServiceAccount,
#      which books the samples and keeps the Loggers, whose pods print their
#      activity line
#
# On a machine whose capability bounding set lacks CAP_SYS_RESOURCE, a stock
# Docker 20.10 engine cannot start kind's --privileged node: the suite then
# starts an engine of its own (tools/kind/dockerd.sh) and stops it at the
# end. When kindest/node cannot be pulled, it builds the node image from
# source first (make kind-image, cached). The cluster, the lab operator and
# that engine are stopped again, whether the suite passed or failed.
#
# Each step prints how long it took; the last lines are a table of them.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
export CLUSTER=kind
KUBECTL="$ROOT/bin/kubectl"

say() { printf '>> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# ------------------------------------------------------------ timing ---
times=()
# step NAME CMD...: run CMD, print and record how long it took.
step() {
	local name=$1 start=$SECONDS
	shift
	say "kind suite: $name"
	"$@"
	times+=("$(printf '%-44s %5ss' "$name" "$((SECONDS - start))")")
}
report() {
	local line
	say "kind suite: how long each step took"
	for line in "${times[@]}"; do echo "   $line"; done
}

# ------------------------------------------------------------ engine ---
# needs_own_engine: Linux, and CAP_SYS_RESOURCE missing from the bounding
# set (setpriv is util-linux's, on every Debian). Docker 20.10 asks for that
# capability for every --privileged container (moby/moby#42906).
needs_own_engine() {
	[[ $(uname -s) == Linux ]] && command -v setpriv >/dev/null &&
		! setpriv -d | grep '^Capability bounding set:' | grep -q sys_resource
}

own_engine=
cleanup() {
	local rc=$?
	trap - EXIT
	make -s lab-stop || true
	make -s cluster-down || true
	[[ -z $own_engine ]] || tools/kind/dockerd.sh stop || true
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if needs_own_engine; then
	say "this machine's capability bounding set lacks CAP_SYS_RESOURCE, which Docker asks for every --privileged container: starting an engine of the suite's own (tools/kind/dockerd.sh)"
	own_engine=1
	# With this shell's pid: should this shell be killed (a CI timeout's
	# SIGKILL runs no trap), the engine is stopped all the same.
	tools/kind/dockerd.sh start $$ >&2
	eval "$(tools/kind/dockerd.sh env)"
fi
make -s docker-check

# --------------------------------------------------------- the cluster ---
node=$(awk '$1 == "KIND_NODE_IMAGE" && $2 == ":=" { print $3 }' tools/versions.mk)
if ! docker image inspect "$node" >/dev/null 2>&1 && ! docker pull -q "$node" >/dev/null 2>&1; then
	step "node image from source (make kind-image)" make -s kind-image
fi
step "cluster (make cluster)" make -s cluster
"$KUBECTL" --kubeconfig "$(cluster/cluster.sh kubeconfig)" get nodes -o wide

# ------------------------------------------------------------ e2e tests ---
e2e() {
	local pkgs=() d
	for d in 0[1-5]-*/e2e; do pkgs+=("./$d/"); done
	E2E_KUBECONFIG=$(cluster/cluster.sh kubeconfig) go test -count=1 -p 1 -timeout 40m "${pkgs[@]}"
}
step "e2e tests of stages 01 to 05" e2e
step "make check-6 on the reference stage" env OPERATOR_PKG=./06-status-and-owners make -s check-6
modules() {
	local pkgs=() d
	for d in advanced/A*/e2e; do pkgs+=("./$d/"); done
	E2E_KUBECONFIG=$(cluster/cluster.sh kubeconfig) go test -count=1 -p 1 -timeout 20m "${pkgs[@]}"
}
step "e2e tests of the day-two modules" modules

# ----------------------------------------------------------------- labs ---
for n in 1 2 3 4 5 6 A1 A2 A3; do
	step "make lab-$n" make -s "lab-$n"
done
make -s lab-stop

# --------------------------------------------------------------- deploy ---
# deployed N: the operator deploy-N put in the cluster books the samples and
# keeps the Loggers, whose pods print; then it is removed again.
deployed() {
	local n=$1 stage k ns=kind-suite
	stage=$(cd "$ROOT" && ls -d 0"$n"-*)
	k=("$KUBECTL" --kubeconfig "$(cluster/cluster.sh kubeconfig)")
	"${k[@]}" -n operator-flow-system get pods -l "app.kubernetes.io/name=operator-flow-0$n" \
		-o custom-columns=POD:.metadata.name,READY:.status.containerStatuses[0].ready,SERVICEACCOUNT:.spec.serviceAccountName
	[[ $("${k[@]}" get namespace operator-flow-system -o jsonpath='{.metadata.labels.pod-security\.kubernetes\.io/enforce}') == restricted ]] ||
		die "namespace operator-flow-system does not enforce Pod Security restricted"
	"${k[@]}" create namespace "$ns"
	"${k[@]}" label namespace "$ns" pod-security.kubernetes.io/enforce=restricted >/dev/null
	"${k[@]}" -n "$ns" apply -f 01-crd-yaml/samples/
	"${k[@]}" -n "$ns" wait --for=jsonpath='{.status.phase}'=Booked flighttickets --all --timeout=120s
	"${k[@]}" -n "$ns" wait --for=jsonpath='{.status.state}'=Available loggers --all --timeout=120s
	# The heartbeat sample prints every 5 s: two lines within 30 s.
	local deadline=$((SECONDS + 30)) lines=0
	while ((SECONDS < deadline)); do
		lines=$("${k[@]}" -n "$ns" logs deploy/logger-heartbeat 2>/dev/null | grep -c ' heartbeat is active$' || true)
		((lines >= 2)) && break
		sleep 1
	done
	((lines >= 2)) || die "deploy-$n: logger-heartbeat printed $lines activity lines in 30s, want 2 or more"
	"${k[@]}" -n "$ns" logs deploy/logger-heartbeat | tail -n 2
	"${k[@]}" delete namespace "$ns" --wait=true --timeout=120s
	"${k[@]}" delete -k "$stage/config/default" --wait=true --timeout=120s
}
for n in 5 6; do
	step "make deploy-$n" make -s "deploy-$n"
	step "deploy-$n at work in the cluster" deployed "$n"
done

report
say "kind suite passed"

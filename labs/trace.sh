#!/usr/bin/env bash
# trace.sh N: what `make trace-N` does. It runs `make lab-N` with the
# operator's side of the wire recorded (apicount's APICOUNT_RECORD), then
# follows one object (OBJ=kind/namespace/name, a sample by default) from
# `kubectl apply` to its converged state, and with DELETE=1 (or
# DELETE=foreground) through its deletion too. The timeline goes to the
# terminal, the Mermaid diagram to .state/trace/. The Makefile starts (or
# reuses) the cluster first.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE="$ROOT/.state"
KUBECONFIG=$("$ROOT/cluster/cluster.sh" kubeconfig)

say() { printf '>> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

n=${1:?usage: trace.sh N}
case "$n" in
[1-6] | 0[1-6])
	n=$((10#$n))
	nn=$(printf '%02d' "$n") # what lab.sh names its files after
	;;
[Aa][0-9]*)
	# A day-two module: its operator is stage 06's, or builds on it.
	nn=A${n:1}
	n=$nn
	[[ -n $(ls -d "$ROOT"/advanced/"$nn"-* 2>/dev/null) ]] || die "there is no day-two module $nn"
	;;
*) die "there is no stage $n; trace a stage from 1 to 6 or a day-two module, e.g. make trace-2, make trace-A1" ;;
esac
obj=${OBJ:-logger/lab/audit}
out="$STATE/trace"
# One set of files per cluster, as lab.sh keeps one log per cluster.
suffix=${CLUSTER_NAME:+-$CLUSTER_NAME}
mkdir -p "$out"

# The operator records into a fresh file; stages 05 and 06 print their log
# times to the nanosecond (controller-runtime's own flag), so that their
# lines fall in place between the requests.
record="$out/record-$nn$suffix.jsonl"
: >"$record"
export APICOUNT_RECORD="$record"
case "$n" in
5 | 6 | A*) export LAB_OPERATOR_ARGS="--zap-time-encoding=rfc3339nano" ;;
esac
say "make lab-$n, with the operator's requests and watch events recorded (${record#"$ROOT"/})"
# A module whose lab needs more than labs/lab.sh (A2, A3: a webhook's
# certificate and configurations) has a lab script of its own.
lab=("$ROOT/labs/lab.sh" lab "$n")
for own in "$ROOT"/advanced/"$nn"-*/hack/lab.sh; do
	[[ -f $own ]] && lab=("$own" lab)
done
if ! "${lab[@]}" >"$out/lab-$nn$suffix.out" 2>&1; then
	cat "$out/lab-$nn$suffix.out" >&2
	die "make lab-$n failed (above); the trace needs it"
fi

args=(--stage "$n" --obj "$obj" --kubeconfig "$KUBECONFIG" --root "$ROOT"
	--out "$out/trace-$n$suffix.md")
if [[ $n != 1 ]]; then
	args+=(--record "$record" --log "$STATE/logs/lab-$nn$suffix.log")
fi
# DELETE=1 deletes it as kubectl does by default (the garbage collector
# removes what it owned afterwards); DELETE=foreground keeps it until the
# garbage collector has.
case "${DELETE:-}" in
'' | 0 | false | no) ;;
foreground | orphan) args+=(--delete --cascade "$DELETE") ;;
*) args+=(--delete) ;;
esac
cd "$ROOT"
go run ./trace/cmd/trace "${args[@]}"

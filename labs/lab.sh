#!/usr/bin/env bash
# lab.sh: what `make run-N`, `make lab-N` and `make lab-stop` do.
#
#   lab.sh run N    install stage N's CRDs, run its operator in the foreground
#   lab.sh lab N [FLAG...]
#                   install stage N's CRDs, replace any lab operator with stage
#                   N's (in the background, with FLAGs), apply the samples,
#                   wait until they converge, print them and where to read on
#   lab.sh stop     stop the operator a lab started, and remove the admission
#                   policies or webhook configurations it installed
#   lab.sh kill     kill that operator (SIGKILL), leaving the rest
#
# N is a stage (1 to 6, or 01 to 06) or a day-two module (A1). A module's
# admission policies (config/admission) are installed with its CRDs; a
# module without an operator of its own runs its base's (advanced/bases.txt).
#
# The Makefile starts (or reuses) the cluster before calling this script.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN="$ROOT/bin"
STATE="$ROOT/.state"
KUBECONFIG=$("$ROOT/cluster/cluster.sh" kubeconfig)
export KUBECONFIG
export PATH="$BIN:$PATH"
PIDFILE="$STATE/lab-operator${CLUSTER_NAME:+-$CLUSTER_NAME}.pid"
CMDLINE="$STATE/lab-operator${CLUSTER_NAME:+-$CLUSTER_NAME}.cmdline" # what ps showed for it

say() { printf '>> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# stage_dir N: the folder of stage N (1 and 01 both work), or of day-two
# module N (A1 and a1 both work), from the repository's root.
stage_dir() {
	local n d
	case "$1" in
	[Aa][0-9]*)
		for d in "$ROOT"/advanced/A"${1:1}"-*/; do
			[[ -d $d ]] && { echo "advanced/$(basename "$d")"; return; }
		done
		die "there is no day-two module $1 (modules: $(cd "$ROOT/advanced" && ls -d A*-* | tr '\n' ' '))"
		;;
	esac
	n=$(printf '%02d' "$((10#$1))") || die "'$1' is not a stage number"
	for d in "$ROOT"/"$n"-*/; do
		[[ -d $d ]] && { basename "$d"; return; }
	done
	die "there is no stage $1 (stages: $(cd "$ROOT" && ls -d 0?-* | tr '\n' ' '))"
}

# id_of DIR: what the lab's files are named after: 06, A1.
id_of() { local b; b=$(basename "$1"); echo "${b%%-*}"; }

# operator_dir DIR: the folder whose operator runs for DIR: DIR's own, or
# for a module without one, its base's.
operator_dir() {
	if [[ -f "$ROOT/$1/main.go" ]]; then
		echo "$1"
	elif [[ $1 == advanced/* ]]; then
		awk -v id="$(id_of "$1")" '$1 == id { print $2 }' "$ROOT/advanced/bases.txt"
	fi
}

# crds_of DIR: where a stage's CRDs are. Stages 02 to 04 use 01's hand-written
# YAML; 05 and 06 generate their own with controller-gen.
crds_of() {
	if [[ -d "$ROOT/$1/config/crd" ]]; then
		echo "$ROOT/$1/config/crd"
	else
		echo "$ROOT/01-crd-yaml/crds"
	fi
}

install_crds() {
	local crds
	crds=$(crds_of "$1")
	# A CRD converted by a webhook names a placeholder Service until its
	# lab script installs it with the operator's address and CA bundle
	# (module A3's hack/install-webhook); applied as it is, every
	# conversion would fail.
	if grep -qs "strategy: Webhook" "$crds"/*.yaml; then
		say "the CRDs of ${crds#"$ROOT"/} convert through the operator's webhook: installed by the module's lab script"
		return
	fi
	say "installing CRDs from ${crds#"$ROOT"/}"
	kubectl apply --server-side --force-conflicts -f "$crds" >/dev/null
	kubectl wait --for=condition=Established crd/flighttickets.flights.com crd/loggers.example.com --timeout=30s >/dev/null
}

# stop_operator [KILL]: stop the lab operator, with SIGTERM, or with
# SIGKILL as a crash would.
stop_operator() {
	[[ -f $PIDFILE ]] || return 0
	local pid signal=${1:-TERM} started
	pid=$(cat "$PIDFILE")
	started=$(cat "$CMDLINE" 2>/dev/null || true)
	# Only signal the process we started: the pid's command line must still
	# be the one recorded when it started, compared as a string (the path
	# may hold spaces, [ or *). ps -o command= prints it on Linux and macOS
	# alike (macOS has no /proc), whole when its output is not a terminal.
	if [[ -n $started ]] && kill -0 "$pid" 2>/dev/null && [[ $(ps -p "$pid" -o command= 2>/dev/null) == "$started" ]]; then
		if [[ $signal == KILL ]]; then
			say "killing the lab operator (pid $pid), as a crash would"
		else
			say "stopping the lab operator (pid $pid)"
		fi
		kill "-$signal" "$pid"
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
	fi
	rm -f "$PIDFILE" "$CMDLINE"
}

has_operator() { [[ -n $(operator_dir "$1") ]]; }

# What a lab set up cluster-wide besides its operator (a module's admission
# policies; module A2's webhook configurations and A3's CRDs, which their
# own lab scripts set up) is removed again when the lab stops or another lab
# starts, `make run-N` included. The file keeps the lab's id only; the
# command is looked up in teardown_command, never read from the file.
TEARDOWN="$STATE/lab-teardown${CLUSTER_NAME:+-$CLUSTER_NAME}"

# The label on what install_admission applies: the teardown deletes by it,
# so a policy renamed or removed in the checkout since goes too.
LAB_LABEL=operator-flow.dev/lab

# teardown_command ID: the command that removes what lab ID set up.
teardown_command() {
	case "$1" in
	A1) echo "kubectl delete --ignore-not-found validatingadmissionpolicies,validatingadmissionpolicybindings,mutatingadmissionpolicies,mutatingadmissionpolicybindings -l $LAB_LABEL" ;;
	A2) echo "advanced/A2-admission-webhook/hack/lab.sh down" ;;
	A3) echo "advanced/A3-api-versions/hack/lab.sh down" ;;
	*) return 1 ;;
	esac
}

install_admission() {
	[[ -d "$ROOT/$1/config/admission" ]] || return 0
	say "installing the admission policies of ${1}/config/admission"
	id_of "$1" >"$TEARDOWN" # first: should the apply fail halfway, stop removes what went in
	# JSON: for several objects, label -o yaml writes documents without a
	# "---" between them; apply reads a stream of JSON objects.
	kubectl label --local -f "$ROOT/$1/config/admission" "$LAB_LABEL=$(id_of "$1")" -o json | kubectl apply -f - >/dev/null
}

remove_admission() {
	[[ -f $TEARDOWN ]] || return 0
	local id teardown
	id=$(<"$TEARDOWN")
	teardown=$(teardown_command "$id") || die "$TEARDOWN names no lab this script knows ('$id'); remove it once you have removed what that lab set up"
	say "removing what the last lab set up: $teardown"
	read -r -a teardown <<<"$teardown" # a command of ours, split into its words
	(cd "$ROOT" && "${teardown[@]}")
	rm -f "$TEARDOWN"
}

# endpoint_flags DIR: the flags that keep stage DIR's endpoints on loopback.
# Stages 05 and 06 serve /metrics and the health probes, by default on
# every interface (":8443", ":8081"); a lab's operator serves the learner's
# curl on this machine, not the network. Same ports, so the labs' commands
# work as written. Stages without those flags get none.
endpoint_flags() {
	local flag
	for flag in metrics-bind-address=127.0.0.1:8443 health-probe-bind-address=127.0.0.1:8081; do
		if grep -q "\"${flag%%=*}\"" "$ROOT/$(operator_dir "$1")/main.go"; then
			echo "--$flag"
		fi
	done
}

# wait_ready DIR PID: an operator that serves health probes answers /readyz
# once it is ready; module A3's, once its webhook server serves, which the
# samples' writes may need for a conversion. An operator that exits is left
# to the check after the samples, which shows its log.
wait_ready() {
	[[ $(endpoint_flags "$1") == *health-probe* ]] || return 0
	local _
	for _ in $(seq 300); do
		curl -fs -o /dev/null http://127.0.0.1:8081/readyz && return 0
		kill -0 "$2" 2>/dev/null || return 0
		sleep 0.1
	done
	die "the operator did not answer http://127.0.0.1:8081/readyz within 30s"
}

build_operator() {
	local dir
	dir=$(operator_dir "$1")
	mkdir -p "$STATE/lab"
	say "building ./$dir"
	(cd "$ROOT" && go build -o "$STATE/lab/operator-$(id_of "$1")" "./$dir")
}

# wait_converged NS: every FlightTicket Booked and every Logger Available.
wait_converged() {
	local ns=$1
	say "waiting for the samples to converge (tickets Booked, Loggers Available)"
	if [[ -n $(kubectl get crd flighttickets.flights.com -o jsonpath='{.spec.versions[0].subresources.status}') ]]; then
		# Stage 06 (status subresource): the phase an earlier lab's operator
		# wrote is there already; only the conditions say this one has been.
		kubectl -n "$ns" wait --for=condition=Booked flighttickets --all --timeout=60s >/dev/null
		kubectl -n "$ns" wait --for=condition=Available loggers --all --timeout=60s >/dev/null
		return
	fi
	kubectl -n "$ns" wait --for=jsonpath='{.status.phase}'=Booked flighttickets --all --timeout=60s >/dev/null
	kubectl -n "$ns" wait --for=jsonpath='{.status.state}'=Available loggers --all --timeout=60s >/dev/null
}

# what_runs DIR: "stage 06 operator", "module A1's operator (stage 06's)".
what_runs() {
	local base
	base=$(operator_dir "$1")
	if [[ $base == "$1" && $1 == advanced/* ]]; then
		echo "module $(id_of "$1") operator"
	elif [[ $base == "$1" ]]; then
		echo "stage $(id_of "$1") operator"
	else
		echo "module $(id_of "$1")'s operator (stage $(id_of "$base")'s)"
	fi
}

cmd=${1:-}
case "$cmd" in
run)
	dir=$(stage_dir "${2:?usage: lab.sh run N}")
	# A lab's operator would hold the ports, and what the last lab set up
	# (a Deny policy, a Fail webhook) would stay, its teardown overwritten.
	stop_operator
	remove_admission
	install_crds "$dir"
	install_admission "$dir"
	has_operator "$dir" || { say "stage $dir has no operator: objects are stored and nothing acts on them. Try: make lab-1"; exit 0; }
	say "running ./$(operator_dir "$dir") in the foreground (Ctrl-C stops it)"
	# shellcheck disable=SC2046 # one flag a line, split on purpose
	cd "$ROOT" && exec go run "./$(operator_dir "$dir")" --kubeconfig "$KUBECONFIG" $(endpoint_flags "$dir")
	;;
lab)
	n=${2:?usage: lab.sh lab N [FLAG...]}
	dir=$(stage_dir "$n")
	shift 2 # the rest: more flags for the operator, each kept whole
	id=$(id_of "$dir")
	ns=lab
	stop_operator
	remove_admission
	install_crds "$dir"
	install_admission "$dir"
	# kubectl keeps what discovery said for hours, per server address: after
	# a CRD lost a version (module A3's Logger v2), a cached list would send
	# `kubectl get loggers` to it. api-resources reads discovery afresh.
	kubectl api-resources >/dev/null
	kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
	if has_operator "$dir"; then
		build_operator "$dir"
		# One log per cluster, like the pid file: a second cluster's lab (the
		# tests use CLUSTER_NAME) must not overwrite the workshop's log.
		log="$STATE/logs/lab-$id${CLUSTER_NAME:+-$CLUSTER_NAME}.log"
		mkdir -p "$STATE/logs"
		# LAB_OPERATOR_ARGS: more flags, as `make trace-N` passes (trace.sh),
		# split at blanks and never globbed; a flag that may hold a path (a
		# module's --webhook-cert-dir) comes as an argument of its own.
		args=("$STATE/lab/operator-$id" --kubeconfig "$KUBECONFIG")
		for flag in $(endpoint_flags "$dir"); do args+=("$flag"); done
		[[ $# -eq 0 ]] || args+=("$@")
		read -r -a extra <<<"${LAB_OPERATOR_ARGS:-}"
		[[ ${#extra[@]} -eq 0 ]] || args+=("${extra[@]}")
		nohup "${args[@]}" >"$log" 2>&1 &
		echo $! >"$PIDFILE"
		echo "${args[*]}" >"$CMDLINE" # ps -o command= joins the arguments with a space too
		say "$(what_runs "$dir") running in the background (pid $!); its log: ${log#"$ROOT"/}"
		wait_ready "$dir" "$!"
	fi
	say "applying the samples into namespace '$ns'"
	kubectl -n "$ns" apply -f "$ROOT/01-crd-yaml/samples/"
	if has_operator "$dir"; then
		wait_converged "$ns" || die "the samples did not converge within 60s; read the operator's log: ${log#"$ROOT"/}"
		# Samples an earlier lab converged prove nothing: the operator must
		# still run (stage 05 stops at once when port 8081 or 8443 is taken).
		# It is our child: once exited, bash reaps it and ps prints nothing
		# (or, not yet reaped, ps shows state Z).
		pid=$(cat "$PIDFILE")
		state=$(ps -p "$pid" -o stat= 2>/dev/null || true)
		if [[ -z $state || $state == Z* ]]; then
			rm -f "$PIDFILE"
			tail -n 3 "$log" >&2
			die "the $(what_runs "$dir") stopped at once; its log: ${log#"$ROOT"/}"
		fi
	fi
	echo
	kubectl -n "$ns" get flighttickets,loggers
	if has_operator "$dir"; then
		echo
		kubectl -n "$ns" get deployments
	fi
	echo
	lab=$(ls "$ROOT"/labs/"$id"-*.md 2>/dev/null | head -n1 || true)
	say "read on: ${lab:+${lab#"$ROOT"/}, and }$dir/README.md"
	say "kubectl: eval \$(make env), then e.g. kubectl -n $ns get ft"
	;;
stop)
	stop_operator
	remove_admission
	;;
kill)
	stop_operator KILL
	;;
*)
	die "usage: lab.sh run N | lab N | stop | kill"
	;;
esac

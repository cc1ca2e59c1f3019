#!/usr/bin/env bash
# dockerd.sh: a Docker engine of its own for the kind node, on machines whose
# capability bounding set lacks CAP_SYS_RESOURCE (this repository's CI
# machines). Test infrastructure only: with a stock Docker engine, kind runs
# as it is, and nothing here is used.
#
#   dockerd.sh start [PID]  start the engine (socket, data and state under
#                      .state/kind-dockerd), its default runtime a copy of
#                      runc-nosysresource in /usr/local/lib/operator-flow;
#                      prints the DOCKER_HOST line. With PID, the engine is
#                      stopped once process PID has ended, however it ended
#                      (a SIGKILL runs no trap)
#   dockerd.sh stop    stop it, removing its containers first (a test run
#                      that was killed leaves no kind node behind); images
#                      stay, so the node image is built once. `make clean`
#                      runs this before it removes .state
#   dockerd.sh env     print: export DOCKER_HOST=...
#
# Why: kind always runs its node `docker run --privileged`, and Docker
# 20.10 then asks runc for every capability, CAP_SYS_RESOURCE included
# (moby/moby#42906): "unable to apply caps: operation not permitted". The
# machine's own engine is left as it is; this one differs only in its
# runtime, which deletes that capability (tools/kind/runc-nosysresource).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DIR="$ROOT/.state/kind-dockerd"
SOCK="$DIR/docker.sock"
PIDFILE="$DIR/dockerd.pid"
# The runtime runs as root for every container the engine starts, so it runs
# from a copy outside the checkout, in a folder of the engine's user (root)
# that no one else may write: whoever can write the checkout cannot change
# what runs as root while the engine runs. KIND_RUNTIME_DIR lets the tests
# use a folder of their own.
RUNTIME_DIR="${KIND_RUNTIME_DIR:-/usr/local/lib/operator-flow}"
RUNTIME="$RUNTIME_DIR/runc-nosysresource"

say() { printf '>> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# alive PID: process PID runs (an exited one that no one has reaped yet, a
# zombie, does not).
alive() {
	local stat
	stat=$(ps -p "$1" -o stat= 2>/dev/null) && [[ $stat != Z* ]]
}
running() { [[ -f $PIDFILE ]] && alive "$(cat "$PIDFILE")"; }

# install_runtime: the checkout's runc-nosysresource, copied to $RUNTIME
# (replaced in one rename, so a container starting meanwhile runs either the
# old copy or the new one).
install_runtime() {
	mkdir -p "$RUNTIME_DIR"
	[[ -O $RUNTIME_DIR ]] || die "$RUNTIME_DIR belongs to another user, who could replace the runtime the engine runs as root; remove it, or set KIND_RUNTIME_DIR to a folder of your own"
	chmod 755 "$RUNTIME_DIR"
	cmp -s "$ROOT/tools/kind/runc-nosysresource" "$RUNTIME" && return 0
	cp "$ROOT/tools/kind/runc-nosysresource" "$RUNTIME.$$"
	chmod 755 "$RUNTIME.$$"
	mv -f "$RUNTIME.$$" "$RUNTIME"
}

# started PID: when process PID started, or nothing once it has ended. A pid
# the kernel gives to a new process later has another start time, unless it
# is reused within the same second (ps shows whole seconds).
started() { ! alive "$1" || ps -p "$1" -o lstart= 2>/dev/null || true; }

# stop_engine: remove the engine's containers and networks, then stop it.
stop_engine() {
	local pid ids
	if ! running; then
		say "the kind engine is not running"
		return 0
	fi
	pid=$(cat "$PIDFILE")
	ids=$(DOCKER_HOST="unix://$SOCK" docker ps -aq)
	[[ -z $ids ]] || DOCKER_HOST="unix://$SOCK" docker rm -f -v $ids >/dev/null
	# kind's network is a bridge on the machine; remove it with the
	# engine's other networks before the engine goes.
	DOCKER_HOST="unix://$SOCK" docker network prune -f >/dev/null
	say "stopping the kind engine (pid $pid)"
	kill -TERM "$pid"
	for _ in $(seq 60); do alive "$pid" || break; sleep 1; done
	# make clean removes .state next, and the engine's data with it.
	! alive "$pid" || die "the kind engine (pid $pid) still runs 60s after SIGTERM; see ${DIR#"$ROOT"/}/dockerd.log"
}

case "${1:-}" in
start)
	command -v dockerd >/dev/null || die "dockerd is not installed (Debian: apt-get install docker.io)"
	owner=${2:-}
	[[ -z $owner || -n $(started "$owner") ]] || die "process $owner is not running: the engine would never be stopped"
	if running; then
		say "the kind engine already runs (pid $(cat "$PIDFILE"))"
	else
		install_runtime
		mkdir -p "$DIR/data" "$DIR/exec"
		# Its own (empty) settings file: the machine's /etc/docker/daemon.json
		# belongs to the machine's engine.
		echo '{}' >"$DIR/daemon.json"
		say "starting a Docker engine for kind on $SOCK (log: ${DIR#"$ROOT"/}/dockerd.log)"
		# The machine's network settings belong to the machine's engine:
		# --bridge none (it owns docker0; kind makes a network of its own,
		# "kind"), and no iptables, ip6tables or ip_forward changes: kind
		# publishes the API server's port through docker-proxy, and nothing
		# in the node reaches out (every image is in it already).
		# setsid: a session of its own, so that a signal to the suite's
		# process group never kills it halfway, leaving the node's
		# container running with no engine to remove it.
		setsid nohup dockerd --config-file "$DIR/daemon.json" --host "unix://$SOCK" --data-root "$DIR/data" --exec-root "$DIR/exec" \
			--pidfile "$PIDFILE" --bridge none --iptables=false --ip6tables=false --ip-forward=false \
			--add-runtime "nosysresource=$RUNTIME" \
			--default-runtime nosysresource \
			</dev/null >"$DIR/dockerd.log" 2>&1 &
		deadline=$((SECONDS + 60))
		until running && DOCKER_HOST="unix://$SOCK" docker info >/dev/null 2>&1; do
			((SECONDS < deadline)) || { tail -n 20 "$DIR/dockerd.log" >&2; die "the kind engine did not answer within 60s"; }
			sleep 1
		done
	fi
	if [[ -n $owner ]]; then
		# A watcher in a session of its own outlives a SIGKILL of the
		# owner and of its process group. Its arguments are read here,
		# before it forks: the owner may be gone by the time it runs.
		since=$(started "$owner") engine=$(cat "$PIDFILE")
		setsid nohup "$ROOT/tools/kind/dockerd.sh" watch "$owner" "$since" "$engine" </dev/null >>"$DIR/watch.log" 2>&1 &
	fi
	echo "export DOCKER_HOST=unix://$SOCK"
	;;
watch)
	# watch OWNER OWNER_STARTED ENGINE: stop engine ENGINE once process
	# OWNER has ended, unless the engine has ended already (a later start
	# has an engine of its own). It stops the engine with what bash read
	# when it started, and exits before reading more of this file.
	owner=$2 since=$3 engine=$4
	while [[ -n $since && $(started "$owner") == "$since" ]] && alive "$engine"; do sleep 2; done
	if [[ $(cat "$PIDFILE" 2>/dev/null) == "$engine" ]]; then
		say "process $owner has ended; stopping the kind engine it started"
		stop_engine
	fi
	exit 0
	;;
stop)
	stop_engine
	;;
env)
	echo "export DOCKER_HOST=unix://$SOCK"
	;;
*)
	die "usage: dockerd.sh start [PID]|stop|env"
	;;
esac

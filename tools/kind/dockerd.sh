#!/usr/bin/env bash
# dockerd.sh: a Docker engine of its own for the kind node, on machines whose
# capability bounding set lacks CAP_SYS_RESOURCE (this repository's CI
# machines). Test infrastructure only: with a stock Docker engine, kind runs
# as it is, and nothing here is used.
#
#   dockerd.sh start   start the engine (socket, data and state under
#                      .state/kind-dockerd), its default runtime
#                      runc-nosysresource; prints the DOCKER_HOST line
#   dockerd.sh stop    stop it, removing its containers first (a test run
#                      that was killed leaves no kind node behind); images
#                      stay, so the node image is built once
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

say() { printf '>> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

running() { [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

case "${1:-}" in
start)
	command -v dockerd >/dev/null || die "dockerd is not installed (Debian: apt-get install docker.io)"
	if running; then
		say "the kind engine already runs (pid $(cat "$PIDFILE"))"
	else
		mkdir -p "$DIR/data" "$DIR/exec"
		# Its own (empty) settings file: the machine's /etc/docker/daemon.json
		# belongs to the machine's engine.
		echo '{}' >"$DIR/daemon.json"
		say "starting a Docker engine for kind on $SOCK (log: ${DIR#"$ROOT"/}/dockerd.log)"
		# --bridge none: the machine's engine owns docker0; kind makes a
		# network of its own ("kind") anyway.
		nohup dockerd --config-file "$DIR/daemon.json" --host "unix://$SOCK" --data-root "$DIR/data" --exec-root "$DIR/exec" \
			--pidfile "$PIDFILE" --bridge none \
			--add-runtime "nosysresource=$ROOT/tools/kind/runc-nosysresource" \
			--default-runtime nosysresource \
			>"$DIR/dockerd.log" 2>&1 &
		deadline=$((SECONDS + 60))
		until DOCKER_HOST="unix://$SOCK" docker info >/dev/null 2>&1; do
			((SECONDS < deadline)) || { tail -n 20 "$DIR/dockerd.log" >&2; die "the kind engine did not answer within 60s"; }
			sleep 1
		done
	fi
	echo "export DOCKER_HOST=unix://$SOCK"
	;;
stop)
	if running; then
		pid=$(cat "$PIDFILE")
		ids=$(DOCKER_HOST="unix://$SOCK" docker ps -aq)
		[[ -z $ids ]] || DOCKER_HOST="unix://$SOCK" docker rm -f -v $ids >/dev/null
		# kind's network is a bridge with iptables rules on the machine; an
		# engine that stops leaves them, so remove the networks first.
		DOCKER_HOST="unix://$SOCK" docker network prune -f >/dev/null
		say "stopping the kind engine (pid $pid)"
		kill -TERM "$pid"
		for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
	else
		say "the kind engine is not running"
	fi
	;;
env)
	echo "export DOCKER_HOST=unix://$SOCK"
	;;
*)
	die "usage: dockerd.sh start|stop|env"
	;;
esac

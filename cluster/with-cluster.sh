#!/usr/bin/env bash
# with-cluster.sh CMD...: run CMD against the workshop cluster.
#
# If a cluster is already running (say, from `make cluster`), CMD uses it and
# it keeps running afterwards. Otherwise this script starts one, and stops it
# again when CMD ends, whether CMD passed or failed: whoever starts a cluster
# stops it.
#
# CMD finds the cluster through E2E_KUBECONFIG, which the e2e harness reads.
# (The harness deliberately ignores KUBECONFIG, so that tests never run
# against whatever cluster your shell happens to point at.)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

started=0
if ! "$HERE/cluster.sh" status >/dev/null 2>&1; then
	"$HERE/cluster.sh" up
	started=1
fi
stop() {
	if [[ $started == 1 ]]; then
		"$HERE/cluster.sh" down
	fi
}
trap stop EXIT
trap 'exit 130' INT TERM

E2E_KUBECONFIG="$("$HERE/cluster.sh" kubeconfig)" "$@"

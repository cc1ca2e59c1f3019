#!/usr/bin/env bash
# with-cluster.sh CMD...: run CMD against the workshop cluster.
#
# If a cluster is already there (say, from `make cluster`), CMD uses it and
# it keeps running afterwards. Otherwise this script starts one, and stops it
# again when CMD ends, whether CMD passed or failed: whoever starts a cluster
# stops it. `cluster.sh up` decides which: it reuses a running cluster,
# restarts a stopped one (which then stays, as it was the user's), refuses a
# cluster of the other kind than CLUSTER says, and tells this script through
# CREATED_FILE when it created a new one.
#
# CMD finds the cluster through E2E_KUBECONFIG, which the e2e harness reads.
# (The harness deliberately ignores KUBECONFIG, so that tests never run
# against whatever cluster your shell happens to point at.)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

created=$(mktemp "${TMPDIR:-/tmp}/with-cluster.XXXXXX")
stop() {
	# Also when `up` created a cluster and then failed: remove what it made.
	if [[ -s $created ]]; then
		"$HERE/cluster.sh" down
	fi
	rm -f "$created"
}
trap stop EXIT
trap 'exit 130' INT TERM

CREATED_FILE="$created" "$HERE/cluster.sh" up

E2E_KUBECONFIG="$("$HERE/cluster.sh" kubeconfig)" "$@"

#!/usr/bin/env bash
# lab.sh: what `make run-A2`, `make lab-A2` and `make webhook-A2-down` do:
# labs/lab.sh's run and lab, plus what a webhook needs besides the
# operator. hack/install-webhook writes a serving certificate into
# .state/webhook-A2 and the two webhook configurations, for the namespace
# lab only, calling https://<host>:9443; the operator gets --webhook-cert-dir
# and --webhook-bind-address as arguments of labs/lab.sh lab, each kept
# whole (the certificate's folder is under the checkout, whose path may
# hold a space). The host is
# 127.0.0.1 on the kwok cluster, whose API server runs on this machine; on
# kind (CLUSTER=kind) it is this machine's address on the Docker network
# kind made, which the API server in the node's container reaches.
#
#   lab.sh run    certificate and configurations (failurePolicy Fail), then
#                 the operator in the foreground
#   lab.sh lab    the same with labs/lab.sh lab A2: the configurations go in
#                 with failurePolicy Ignore first, so that the samples
#                 applied while the operator starts are not refused, and
#                 are switched to Fail once the samples have converged
#   lab.sh down   delete the configurations: with the operator stopped and
#                 failurePolicy Fail, every create and update of a Logger in
#                 namespace lab is
#                 refused, whichever stage's lab runs next. make lab-stop,
#                 the next lab and the next run-N run it (.state/lab-teardown
#                 names the lab, A2; labs/lab.sh knows its command)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$ROOT"
CERTS="$ROOT/.state/webhook-A2${CLUSTER_NAME:+-$CLUSTER_NAME}"
KUBECONFIG=$(cluster/cluster.sh kubeconfig)
export KUBECONFIG

HOST=127.0.0.1
if [[ ${CLUSTER:-kwok} == kind ]]; then
	HOST=$(docker network inspect kind --format '{{range .IPAM.Config}}{{.Gateway}} {{end}}' | tr ' ' '\n' | grep -v : | head -n1 || true)
	[[ -n $HOST ]] || { echo "error: docker network kind has no IPv4 gateway" >&2; exit 1; }
fi

install_webhook() {
	go run ./advanced/A2-admission-webhook/hack/install-webhook --namespace lab --cert-dir "$CERTS" --host "$HOST" "$@"
}

# teardown_later: make lab-stop, and the next lab, remove the configurations
# again (labs/lab.sh's teardown_command runs this script's down for A2).
teardown_later() {
	echo A2 >"$ROOT/.state/lab-teardown${CLUSTER_NAME:+-$CLUSTER_NAME}"
}

case "${1:-}" in
run)
	labs/lab.sh stop # the last lab's operator and what it set up go first
	install_webhook --failure-policy Fail
	teardown_later
	# labs/lab.sh run passes no extra flags: run the operator here.
	bin/kubectl apply --server-side --force-conflicts -f advanced/A2-admission-webhook/config/crd >/dev/null
	exec go run ./advanced/A2-admission-webhook --kubeconfig "$KUBECONFIG" \
		--metrics-bind-address=127.0.0.1:8443 --health-probe-bind-address=127.0.0.1:8081 \
		--webhook-bind-address="$HOST:9443" --webhook-cert-dir="$CERTS"
	;;
lab)
	labs/lab.sh stop # the last lab's operator and what it set up go first
	install_webhook --failure-policy Ignore
	# Recorded only once the lab has run: should labs/lab.sh fail, the
	# configurations stay, with Ignore; make webhook-A2-down removes them.
	labs/lab.sh lab A2 --webhook-bind-address="$HOST:9443" --webhook-cert-dir="$CERTS"
	install_webhook --failure-policy Fail --keep-cert
	teardown_later
	;;
down)
	go run ./advanced/A2-admission-webhook/hack/install-webhook --delete
	;;
*)
	echo "usage: $0 run | lab | down" >&2
	exit 2
	;;
esac

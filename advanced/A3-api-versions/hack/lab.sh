#!/usr/bin/env bash
# lab.sh: what `make run-A3`, `make lab-A3` and `make lab-A3-down` do:
# labs/lab.sh's run and lab, plus what the webhooks need besides the
# operator. hack/install-webhook writes a serving certificate into
# .state/webhook-A3, installs the CRDs with the Logger's conversion webhook
# at https://<host>:9443/convert, and A2's two admission webhook
# configurations for the namespace lab; the operator gets
# --webhook-cert-dir and --webhook-bind-address as arguments of labs/lab.sh
# lab, each kept whole (the certificate's folder is under the checkout,
# whose path may hold a space).
# The host is 127.0.0.1 on the kwok cluster, whose API server runs on this
# machine; on kind (CLUSTER=kind) it is this machine's address on the Docker
# network kind made, which the API server in the node's container reaches.
#
#   lab.sh run    certificate, CRDs and configurations (failurePolicy
#                 Fail), then the operator in the foreground
#   lab.sh lab    first the cluster as module A2 leaves it, when the Logger
#                 CRD has no v2 yet: A2's CRDs (v1 only) and the samples in
#                 namespaces lab and archive, stored as v1; then the
#                 upgrade (the module's CRDs, v2 stored) and labs/lab.sh
#                 lab A3, its operator watching lab only. The admission
#                 configurations go in with failurePolicy Ignore, and are
#                 switched to Fail once the samples have converged
#   lab.sh down   delete the admission configurations, every Logger with
#                 its Deployment, and the Logger CRD: another lab's v1-only
#                 CRD is refused while status.storedVersions lists v2, and
#                 with the operator stopped, every conversion fails. make
#                 lab-stop, the next lab and the next run-N run it
#                 (.state/lab-teardown names the lab, A3; labs/lab.sh
#                 knows its command)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$ROOT"
CERTS="$ROOT/.state/webhook-A3${CLUSTER_NAME:+-$CLUSTER_NAME}"
KUBECONFIG=$(cluster/cluster.sh kubeconfig)
export KUBECONFIG

say() { printf '>> %s\n' "$*"; }

HOST=127.0.0.1
if [[ ${CLUSTER:-kwok} == kind ]]; then
	HOST=$(docker network inspect kind --format '{{range .IPAM.Config}}{{.Gateway}} {{end}}' | tr ' ' '\n' | grep -v : | head -n1 || true)
	[[ -n $HOST ]] || { echo "error: docker network kind has no IPv4 gateway" >&2; exit 1; }
fi

install_webhook() {
	go run ./advanced/A3-api-versions/hack/install-webhook --namespace lab --cert-dir "$CERTS" --host "$HOST" "$@"
}

TEARDOWN="$ROOT/.state/lab-teardown${CLUSTER_NAME:+-$CLUSTER_NAME}"

# teardown_later: make lab-stop, and the next lab, remove what this lab set
# up again (labs/lab.sh's teardown_command runs this script's down for A3).
teardown_later() {
	echo A3 >"$TEARDOWN"
}

# stop_last_lab: stop the last lab's operator and remove what it set up,
# unless that lab was this one: run again, this lab keeps what it set up
# (the upgrade, the Loggers).
stop_last_lab() {
	if [[ -f $TEARDOWN && $(<"$TEARDOWN") == A3 ]]; then
		rm -f "$TEARDOWN"
	fi
	labs/lab.sh stop
}

# delete_loggers: every Logger's Deployment, then every Logger, before the
# CRD goes. A Deployment the A3 operator made names its owner as
# example.com/v2; once no served version resolves that, the garbage
# collector keeps the Deployment and retries for ever, and the next lab's
# operator finds logger-audit controlled by a Logger that no longer exists.
# So the Deployments are deleted here, by their label, not left to the
# collector (the lab's operator is stopped: nothing makes them again), and
# kubectl returns once they are gone.
delete_loggers() {
	say "deleting every Logger's Deployment, then every Logger: the garbage collector cannot find an owner whose version is gone"
	bin/kubectl delete deployments --all-namespaces -l app.kubernetes.io/managed-by=operator-flow --timeout=60s >/dev/null
	bin/kubectl delete loggers --all --all-namespaces --timeout=60s >/dev/null
}

# before_upgrade: Loggers stored as v1, as module A2's lab leaves them,
# unless the Logger CRD has a v2 already (lab-A3 ran before).
before_upgrade() {
	if [[ $(bin/kubectl get crd loggers.example.com -o jsonpath='{.spec.versions[*].name}' 2>/dev/null) == *v2* ]]; then
		say "the Logger CRD has v2 already: no upgrade to make"
		return
	fi
	say "before the upgrade: module A2's CRDs (Logger v1 only) and the samples in namespaces lab and archive, stored as v1"
	bin/kubectl apply --server-side --force-conflicts -f advanced/A2-admission-webhook/config/crd >/dev/null
	bin/kubectl wait --for=condition=Established crd/loggers.example.com --timeout=30s >/dev/null
	local ns
	for ns in lab archive; do
		bin/kubectl create namespace "$ns" --dry-run=client -o yaml | bin/kubectl apply -f - >/dev/null
		bin/kubectl -n "$ns" apply -f 01-crd-yaml/samples/ >/dev/null
	done
}

case "${1:-}" in
run)
	stop_last_lab
	install_webhook --failure-policy Fail
	teardown_later
	# labs/lab.sh run passes no extra flags: run the operator here.
	exec go run ./advanced/A3-api-versions --kubeconfig "$KUBECONFIG" \
		--metrics-bind-address=127.0.0.1:8443 --health-probe-bind-address=127.0.0.1:8081 \
		--webhook-bind-address="$HOST:9443" --webhook-cert-dir="$CERTS"
	;;
lab)
	stop_last_lab
	before_upgrade
	say "the upgrade: the module's CRDs (v1 and v2, v2 stored), converted by the operator"
	install_webhook --failure-policy Ignore
	# Recorded only once the lab has run: should labs/lab.sh fail, the
	# configurations stay, with Ignore; make lab-A3-down removes them.
	# --namespace lab: the operator writes the status of lab's Loggers,
	# which stores them as v2; archive's, which nobody writes, stay v1
	# until the migration.
	labs/lab.sh lab A3 --namespace=lab --webhook-bind-address="$HOST:9443" --webhook-cert-dir="$CERTS"
	install_webhook --failure-policy Fail --keep-cert
	teardown_later
	echo
	say "where each Logger is stored (make stored-A3):"
	go run ./advanced/A3-api-versions/hack/stored-versions
	;;
down)
	go run ./advanced/A3-api-versions/hack/install-webhook --delete
	if bin/kubectl get crd loggers.example.com >/dev/null 2>&1; then
		say "deleting the Logger CRD and every Logger: a stage's lab installs a v1-only CRD, which the API server refuses while status.storedVersions lists v2"
		# strategy None first: deleting the Loggers reads them, and with
		# the operator stopped no conversion webhook answers.
		bin/kubectl patch crd loggers.example.com --type=json \
			-p '[{"op":"replace","path":"/spec/conversion","value":{"strategy":"None"}}]' >/dev/null
		delete_loggers
		bin/kubectl delete crd loggers.example.com --timeout=60s
		# kubectl keeps the API's discovery for hours, and would send the
		# next lab's `kubectl ... loggers` requests to v2; api-resources
		# reads it afresh.
		bin/kubectl api-resources >/dev/null
	fi
	;;
*)
	echo "usage: $0 run | lab | down" >&2
	exit 2
	;;
esac

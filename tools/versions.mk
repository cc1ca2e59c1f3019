# Every pinned tool version, in one place. The Makefile includes this file;
# tools/pins_test.go fails when tools/kube/go.mod or tools/etcd/go.mod
# disagree with it, so a bump here cannot silently build something else.
#
# Changing a pin and running `make tools` rebuilds only that tool.

# The workshop cluster: kube-apiserver, kube-controller-manager,
# kube-scheduler and kubectl, built from k8s.io/kubernetes (tools/kube).
KUBE_VERSION := v1.36.3
# etcd, built through a two-line main (tools/etcd).
ETCD_VERSION := v3.6.16
# kwok simulates nodes and pods; kwokctl starts the cluster.
KWOK_VERSION := v0.8.0
# kind, for CLUSTER=kind (needs a Docker engine).
KIND_VERSION := v0.33.0
# The kind node: the newest kindest/node of KUBE_VERSION's minor built for
# KIND_VERSION, pinned by digest. kind's own default would be v1.37.0. There
# is no v1.36.3 node image, so kind's patch is v1.36.4 while the kwok
# cluster's is KUBE_VERSION (same minor, same APIs).
KIND_NODE_IMAGE := kindest/node:v1.36.4@sha256:099e049362a1526b2db71494e1947aae99bd16290d7c895f2b7ea312e3cbfaed
# The node image `make kind-image` builds from source when kindest/node cannot
# be pulled (tools/kind/node-image.sh): Kubernetes is KUBE_VERSION, etcd
# ETCD_VERSION; these are the rest. containerd, crictl and CoreDNS are the
# versions kind's base image and kubeadm use; Debian bookworm's systemd 252 still runs
# on cgroup v1 hosts.
KIND_CONTAINERD_VERSION := v2.3.4
KIND_CRICTL_VERSION := v1.36.0
KIND_COREDNS_VERSION := v1.14.2
KIND_DEBIAN_SUITE := bookworm
# controller-gen writes CRDs and RBAC from kubebuilder markers (stages 05, 06).
CONTROLLER_GEN_VERSION := v0.23.0
# govulncheck, for `make vulncheck` (needs the internet for its database).
GOVULNCHECK_VERSION := v1.9.0
# golangci-lint, for `make lint` (.golangci.yml says which linters run).
GOLANGCI_LINT_VERSION := v2.15.0
# kube-api-linter checks 05's and 06's API types against the Kubernetes API
# conventions, as a module linter built into golangci-lint (one binary,
# bin/golangci-lint). It has no releases: a pseudo-version, its commit.
KUBE_API_LINTER_VERSION := v0.0.0-20260716143926-092fe0c72997

#!/usr/bin/env bash
# node-image.sh: build a kind node image for KUBE_VERSION from source, with
# no image registry: what `make kind-image` runs. Linux only (debootstrap,
# chroot); test infrastructure for machines that cannot pull kindest/node.
#
# It does by hand what `kind build node-image` does (that command always
# pulls its base image, etcd, CoreDNS, pause and kindnetd):
#
#   1. static binaries (CGO_ENABLED=0) from the Go module proxy: the
#      control plane, kubectl and etcd are the ones `make tools` builds into
#      ./bin for the kwok cluster; kubelet, kubeadm and kube-proxy come from
#      the same module (tools/kube) with the same settings, so they compile
#      only what the control plane does not share; containerd, crictl and
#      CoreDNS from their modules; pause from the kubernetes module's
#      build/pause/linux/pause.c
#   2. a Debian rootfs (debootstrap, Debian's packages: systemd, iptables,
#      runc, CNI plugins, ...) plus kind's own files from the
#      sigs.k8s.io/kind module (entrypoint, systemd units, containerd config)
#   3. one image per control-plane component, named as kubeadm expects
#      (registry.k8s.io/...), plus busybox for the Loggers (Debian's static
#      busybox), saved into the node's containerd store, pinned; in the
#      engine they are named under operator-flow/node-images/ only
#   4. the node image, operator-flow/kind-node:KUBE_VERSION
#
# kindnetd is not on the Go module proxy: the node has a static CNI config
# instead (ptp + host-local), which is all a one-node cluster needs.
#
# Everything is cached under .state/kind-node; the image carries a label with
# a checksum of the pins and of tools/kind, and is rebuilt only when those
# change. DOCKER_HOST says which engine builds it.
set -euo pipefail
# The legacy builder: FROM a local image, it never asks a registry.
export DOCKER_BUILDKIT=0

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT="$ROOT/.state/kind-node"
B="$OUT/bin"
ROOTFS="$OUT/rootfs"
IMAGES="$OUT/images"

say() { printf '>> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
pin() { awk -v name="$1" '$1 == name && $2 == ":=" { print $3 }' "$ROOT/tools/versions.mk"; }
# step NAME: time a step and say how long it took.
step_start=$SECONDS
step() { say "$* (previous step: $((SECONDS - step_start))s)"; step_start=$SECONDS; }

KUBE_VERSION=$(pin KUBE_VERSION)
KIND_VERSION=$(pin KIND_VERSION)
CONTAINERD_VERSION=$(pin KIND_CONTAINERD_VERSION)
CRICTL_VERSION=$(pin KIND_CRICTL_VERSION)
COREDNS_VERSION=$(pin KIND_COREDNS_VERSION)
DEBIAN_SUITE=$(pin KIND_DEBIAN_SUITE)
IMAGE="operator-flow/kind-node:$KUBE_VERSION"
GOMODCACHE=$(go env GOMODCACHE)
KIND_FILES="$GOMODCACHE/sigs.k8s.io/kind@$KIND_VERSION/images/base/files"

[[ $(uname -s) == Linux ]] || die "the node image is built on Linux (debootstrap, chroot); elsewhere kind pulls kindest/node"
for c in docker debootstrap gpgv gcc jq; do
	command -v "$c" >/dev/null || die "$c is missing (Debian: apt-get install docker.io debootstrap gpgv gcc jq)"
done
# debootstrap fetches over plain HTTP and checks the suite's Release file
# against this keyring (the Release file's checksums cover the Packages
# index, whose checksums cover each package). Without the keyring it would
# only warn, and go on unchecked.
# DEBIAN_KEYRING: where it is, when not where Debian's package puts it.
KEYRING=${DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
[[ -f $KEYRING ]] || die "$KEYRING is missing, and debootstrap needs it to check what it downloads (Debian, Ubuntu: apt-get install debian-archive-keyring)"

# The checksum of everything the image is made from.
STAMP=$(cat "$ROOT/tools/versions.mk" "$ROOT"/tools/kind/* "$ROOT/tools/kube/go.sum" "$ROOT/tools/etcd/go.sum" | cksum | awk '{print $1}')
if [[ $(docker image inspect --format '{{index .Config.Labels "operator-flow.stamp"}}' "$IMAGE" 2>/dev/null) == "$STAMP" ]]; then
	say "$IMAGE is up to date (pins unchanged)"
	exit 0
fi
mkdir -p "$B" "$IMAGES"
total=$SECONDS

# ------------------------------------------------------------ binaries ---
if [[ $(cat "$B/.stamp" 2>/dev/null) != "$STAMP" ]]; then
	step "building static binaries into ${B#"$ROOT"/}"
	shared=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd)
	make -s -C "$ROOT" "${shared[@]/#/$ROOT/bin/}"
	for b in "${shared[@]}"; do cp "$ROOT/bin/$b" "$B/"; done
	ldflags=$(make -s -C "$ROOT" --eval 'print-kube-ldflags: ; @echo $(KUBE_LDFLAGS)' print-kube-ldflags)
	export CGO_ENABLED=0
	(cd "$ROOT/tools/kube" && go build -trimpath -ldflags "$ldflags" -o "$B/" \
		k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubeadm k8s.io/kubernetes/cmd/kube-proxy)
	GOBIN="$B" go install -trimpath -ldflags '-s -w' -tags 'no_btrfs no_devmapper no_zfs' \
		"github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
		"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" \
		"github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION"
	GOBIN="$B" go install -trimpath -ldflags '-s -w' "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION"
	GOBIN="$B" go install -trimpath -ldflags '-s -w' "github.com/coredns/coredns@$COREDNS_VERSION"
	unset CGO_ENABLED
	gcc -Os -Wall -Werror -static -DVERSION="v3.10-operator-flow" -o "$B/pause" \
		"$GOMODCACHE/k8s.io/kubernetes@$KUBE_VERSION/build/pause/linux/pause.c"
	echo "$STAMP" >"$B/.stamp"
fi

# -------------------------------------------------------------- rootfs ---
# The same packages kind's base image installs (images/base/Dockerfile),
# minus the ones for storage kinds no test uses; runc and the CNI plugins
# come from Debian too. bookworm: its systemd 252 still runs on cgroup v1.
# busybox-static is the Loggers' image (below), from the same suite.
# --force-check-gpg only matters should --keyring ever be dropped: without a
# keyring debootstrap would otherwise warn and go on unchecked. With
# --keyring, a missing keyring file or a Release file it does not verify
# already stops it.
PACKAGES=systemd,systemd-sysv,dbus,iptables,nftables,conntrack,iproute2,ethtool,util-linux,mount,kmod,procps,libseccomp2,ca-certificates,jq,runc,containernetworking-plugins,socat,ebtables,bash,e2fsprogs,busybox-static
if [[ $(cat "$ROOTFS/.debootstrapped" 2>/dev/null) != "$DEBIAN_SUITE $PACKAGES" ]]; then
	step "debootstrap $DEBIAN_SUITE into ${ROOTFS#"$ROOT"/}"
	rm -rf "$ROOTFS"
	debootstrap --variant=minbase --force-check-gpg --keyring="$KEYRING" --include="$PACKAGES" \
		"$DEBIAN_SUITE" "$ROOTFS" http://deb.debian.org/debian
	echo "$DEBIAN_SUITE $PACKAGES" >"$ROOTFS/.debootstrapped"
fi

step "adding kind's files and the binaries to the rootfs"
cp -R "$KIND_FILES/." "$ROOTFS/"
chmod 0755 "$ROOTFS/usr/local/bin/entrypoint" "$ROOTFS"/kind/bin/*.sh "$ROOTFS/usr/local/bin/clean-install"
# As kind's Dockerfile: only the units a node needs start at boot.
find "$ROOTFS/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
rm -f "$ROOTFS"/lib/systemd/system/multi-user.target.wants/* "$ROOTFS"/etc/systemd/system/*.wants/* \
	"$ROOTFS"/lib/systemd/system/local-fs.target.wants/* "$ROOTFS"/lib/systemd/system/sockets.target.wants/*udev* \
	"$ROOTFS"/lib/systemd/system/sockets.target.wants/*initctl* "$ROOTFS"/lib/systemd/system/basic.target.wants/*
grep -q '^ReadKMsg=no' "$ROOTFS/etc/systemd/journald.conf" || echo "ReadKMsg=no" >>"$ROOTFS/etc/systemd/journald.conf"
chroot "$ROOTFS" systemctl enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
chroot "$ROOTFS" systemctl mask systemd-binfmt.service >/dev/null 2>&1
mkdir -p "$ROOTFS/etc/kubernetes/manifests" "$ROOTFS/opt/cni/bin" "$ROOTFS/etc/cni/net.d" "$ROOTFS/usr/local/sbin"
cp "$B/containerd" "$B/containerd-shim-runc-v2" "$B/ctr" "$B/crictl" "$ROOTFS/usr/local/bin/"
cp "$B/kubelet" "$B/kubeadm" "$B/kubectl" "$ROOTFS/usr/bin/"
# containerd runs `runc` from PATH: /usr/local/sbin comes before Debian's
# /usr/sbin/runc. See the wrapper for why.
cp "$ROOT/tools/kind/runc-nosysresource" "$ROOTFS/usr/local/sbin/runc"
for p in "$ROOTFS"/usr/lib/cni/*; do ln -sf "/usr/lib/cni/${p##*/}" "$ROOTFS/opt/cni/bin/${p##*/}"; done
cp "$ROOT/tools/kind/10-ptp.conflist" "$ROOTFS/etc/cni/net.d/"
# kind applies /kind/manifests/default-cni.yaml; this one only says which
# CNI the node has, as the conflist above does the work.
mkdir -p "$ROOTFS/kind/manifests" && cp "$ROOT/tools/kind/default-cni.yaml" "$ROOTFS/kind/manifests/"
echo "$KUBE_VERSION" >"$ROOTFS/kind/version"
# The spec every pod container starts from, as kind makes it.
"$B/ctr" oci spec |
	jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
	jq 'del(.process.rlimits)' >"$ROOTFS/etc/containerd/cri-base.json"

# -------------------------------------------------------------- images ---
# The node's containerd needs these images under the names kubeadm and the
# Loggers use (registry.k8s.io/..., docker.io/library/busybox:1.37). In the
# engine DOCKER_HOST names, which may be the machine's own, those names may
# be another project's images: there they are named under STAGED only, and
# take their real names inside the node's containerd (below).
STAGED=operator-flow/node-images
# scratch_image NAME DIR [ENTRYPOINT-JSON]: an image of DIR's files, STAGED/NAME.
scratch_image() {
	local name=$1 dir=$2 entry=${3:-}
	local change=(--change 'ENV PATH=/usr/local/bin:/usr/bin:/bin')
	[[ -z $entry ]] || change+=(--change "ENTRYPOINT $entry")
	tar -C "$dir" -c . | docker import "${change[@]}" - "$STAGED/$name" >/dev/null
}
step "building the images kubeadm and the tests use"
rm -rf "$IMAGES" && mkdir -p "$IMAGES"
list=$("$B/kubeadm" config images list --kubernetes-version "$KUBE_VERSION")
names=()
for c in kube-apiserver kube-controller-manager kube-scheduler; do
	mkdir -p "$IMAGES/$c/usr/local/bin" && cp "$B/$c" "$IMAGES/$c/usr/local/bin/"
	name=$(grep "/$c:" <<<"$list")
	scratch_image "$name" "$IMAGES/$c"
	names+=("$name")
done
mkdir -p "$IMAGES/etcd/usr/local/bin" "$IMAGES/etcd/var/lib/etcd" && cp "$B/etcd" "$IMAGES/etcd/usr/local/bin/"
name=$(grep '/etcd:' <<<"$list") && scratch_image "$name" "$IMAGES/etcd" && names+=("$name")
mkdir -p "$IMAGES/coredns" && cp "$B/coredns" "$IMAGES/coredns/"
name=$(grep '/coredns:' <<<"$list") && scratch_image "$name" "$IMAGES/coredns" '["/coredns"]' && names+=("$name")
mkdir -p "$IMAGES/pause" && cp "$B/pause" "$IMAGES/pause/"
# kubeadm's pause tag, and the one kind's containerd config names.
for name in $(grep '/pause:' <<<"$list") registry.k8s.io/pause:3.10; do
	[[ " ${names[*]} " != *" $name "* ]] || continue
	scratch_image "$name" "$IMAGES/pause" '["/pause"]' && names+=("$name")
done
# kube-proxy needs iptables and friends: the node's own rootfs, plus it.
tar -C "$ROOTFS" -c . | docker import - operator-flow/kind-rootfs:"$STAMP" >/dev/null
mkdir -p "$IMAGES/kube-proxy" && cp "$B/kube-proxy" "$IMAGES/kube-proxy/"
printf 'FROM operator-flow/kind-rootfs:%s\nCOPY kube-proxy /usr/local/bin/kube-proxy\n' "$STAMP" >"$IMAGES/kube-proxy/Dockerfile"
name="registry.k8s.io/kube-proxy:$KUBE_VERSION"
docker build -q -t "$STAGED/$name" "$IMAGES/kube-proxy" >/dev/null && names+=("$name")
# The Loggers' image: Debian's static busybox under the name the operators
# use by default (busybox:1.37; Debian's is older, and does the same here).
# Its version is the suite's, recorded in the node image's labels.
BUSYBOX_VERSION=$(chroot "$ROOTFS" dpkg-query -W -f '${Version}' busybox-static)
say "busybox: Debian $DEBIAN_SUITE's busybox-static $BUSYBOX_VERSION"
mkdir -p "$IMAGES/busybox/bin" && cp "$ROOTFS/bin/busybox" "$IMAGES/busybox/bin/"
for a in $("$IMAGES/busybox/bin/busybox" --list); do
	[[ -e "$IMAGES/busybox/bin/$a" ]] || ln -s busybox "$IMAGES/busybox/bin/$a"
done
name=docker.io/library/busybox:1.37 && scratch_image "$name" "$IMAGES/busybox" '["/bin/sh"]' && names+=("$name")
docker save -o "$OUT/images.tar" "${names[@]/#/$STAGED/}"

# ---------------------------------------------------------------- node ---
step "assembling $IMAGE: the rootfs, with the images in its containerd store"
printf 'FROM operator-flow/kind-rootfs:%s\nENV container=docker\nSTOPSIGNAL SIGRTMIN+3\nENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]\n' "$STAMP" |
	docker build -q -t operator-flow/kind-base:"$STAMP" - >/dev/null
builder="operator-flow-kind-build-$$"
# --init: a PID 1 that reaps, so that a stopped containerd is gone, not a
# zombie that pgrep still finds.
docker run -d --init --name "$builder" --privileged --entrypoint sleep operator-flow/kind-base:"$STAMP" infinity >/dev/null
trap 'docker rm -f "$builder" >/dev/null 2>&1 || true' EXIT
docker cp "$OUT/images.tar" "$builder:/images.tar"
# --no-unpack, as kind does: only the content store is filled here; the
# node unpacks on first use, on its own /var volume. Then each image takes
# its real name (tag --local keeps the pinned label) and loses the staged one.
docker exec "$builder" sh -c '
	set -e
	staged=$1 && shift
	mkdir -p /run/containerd && (containerd >/tmp/containerd.log 2>&1 &)
	for i in $(seq 30); do ctr version >/dev/null 2>&1 && break; sleep 1; done
	ctr -n k8s.io images import --label io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests /images.tar >/dev/null
	for name in "$@"; do
		ctr -n k8s.io images tag --local "docker.io/$staged/$name" "$name" >/dev/null
		ctr -n k8s.io images rm "docker.io/$staged/$name" >/dev/null
	done
	ctr -n k8s.io images ls -q
	pkill containerd; while pgrep -x containerd >/dev/null; do sleep 0.2; done; rm -f /images.tar' sh "$STAGED" "${names[@]}"
docker commit --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
	--change "LABEL operator-flow.stamp=$STAMP" --change "LABEL operator-flow.busybox-static=$BUSYBOX_VERSION" "$builder" "$IMAGE" >/dev/null
docker rm -f "$builder" >/dev/null
step "$IMAGE built in $((SECONDS - total))s"

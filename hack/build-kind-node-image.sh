#!/usr/bin/env bash
# Copyright 2026 The gpupool Authors.
# SPDX-License-Identifier: Apache-2.0
# Builds a kind node image for $KUBE_VERSION with nothing pulled from any
# registry: a Debian rootfs by debootstrap, kind's own base files from the
# kind module, kubelet/kubeadm/kubectl and the control-plane images built
# from Go modules, CoreDNS and pause built here, all preloaded into the
# node's containerd. What each step works around is in
# ../shared/docs/kind-offline.md.
#
# Cached twice: the image tag carries a hash of every input (this script,
# the pinned versions, kind's base files, the CoreDNS and pause sources),
# so a warm run is one `docker image inspect`; the rootfs tarball is kept in
# the build cache, so a fresh Docker engine re-imports it without
# debootstrap. Prints the image name on stdout and writes it to
# $GPUPOOL_CACHE/kind-node-image.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/hack/lib.sh"

COREDNS_VERSION="${COREDNS_VERSION:-v1.14.6}"
DEBIAN_SUITE="${DEBIAN_SUITE:-bookworm}"
# Every tag kubeadm or kind's containerd config may ask for the sandbox by.
PAUSE_TAGS=(3.10 3.10.2)
NODE_PACKAGES=(systemd systemd-sysv dbus containerd runc iptables nftables conntrack ethtool socat
  iproute2 util-linux mount kmod ca-certificates containernetworking-plugins jq curl procps
  libseccomp2 bash)

SCRATCH=()
CONTAINERS=()
IMAGES=()     # component images, and the base: intermediate, removed on any exit
cleanup() {
  local c
  for c in "${CONTAINERS[@]}"; do docker rm -f "$c" >/dev/null 2>&1 || true; done
  [[ ${#IMAGES[@]} -eq 0 ]] || docker rmi "${IMAGES[@]}" >/dev/null 2>&1 || true
  [[ ${#SCRATCH[@]} -eq 0 ]] || rm -rf "${SCRATCH[@]}"
}
trap cleanup EXIT
new_scratch() { local d; d="$(mktemp -d "$GPUPOOL_CACHE/.kind-build.XXXXXX")"; SCRATCH+=("$d"); REPLY="$d"; }

die() { log "build-kind-node-image: $*"; exit 1; }

kind_files() {
  local dir; dir="$(cd "$ROOT" && go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | jq -r .Dir)"
  echo "$dir/images/base/files"
}

# rootfs_hash: what decides the node's root filesystem (debootstrap is the
# slow part, so editing anything else in this script does not redo it).
rootfs_hash() {
  {
    echo "$KIND_VERSION $DEBIAN_SUITE ${NODE_PACKAGES[*]}"
    declare -f build_rootfs
    (cd "$KIND_FILES" && find . -type f | sort | xargs sha256sum)
  } | sha256sum | cut -c1-12
}

# image_hash: what decides the image: the rootfs and everything added to it.
image_hash() {
  {
    echo "$ROOTFS_KEY $KUBE_VERSION $ETCD_VERSION $COREDNS_VERSION ${PAUSE_TAGS[*]}"
    cat "${BASH_SOURCE[0]}" "$ROOT/hack/tools/pause/main.go" "$ROOT/hack/tools/coredns/main.go" "$ROOT/hack/tools/coredns/go.sum"
  } | sha256sum | cut -c1-12
}

preflight() {
  command -v docker >/dev/null || die "no docker client; run hack/setup-docker.sh"
  docker info >/dev/null 2>&1 || die "the Docker engine does not answer; run hack/setup-docker.sh"
  command -v jq >/dev/null || die "jq is missing; run hack/setup-docker.sh"
}

# --- binaries -------------------------------------------------------------

build_coredns() {
  COREDNS_BIN="$GPUPOOL_CACHE/coredns-$COREDNS_VERSION/coredns"
  [[ -x $COREDNS_BIN ]] && { log "coredns $COREDNS_VERSION: cached"; return; }
  log "coredns $COREDNS_VERSION: building (kubeadm's plugins only; cold: about 2 min)"
  new_scratch; local tmp="$REPLY"
  (cd "$ROOT/hack/tools/coredns" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/coredns" .)
  mkdir -p "$(dirname "$COREDNS_BIN")"; mv "$tmp/coredns" "$COREDNS_BIN"
}

build_pause() {
  new_scratch; PAUSE_BIN="$REPLY/pause"
  (cd "$ROOT/hack/tools" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$PAUSE_BIN" ./pause)
}

# --- the node's root filesystem ----------------------------------------------

debian_mirror() {
  local m
  m="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
  [[ -n $m ]] || m="$(awk '/^deb / {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)"
  echo "${m:-http://deb.debian.org/debian}"
}

# build_rootfs DIR: Debian plus what kind's base image Dockerfile adds.
build_rootfs() {
  local rootfs="$1" files="$KIND_FILES"
  [[ $(id -u) -eq 0 ]] || die "debootstrap needs root"
  command -v debootstrap >/dev/null || die "debootstrap is missing; run hack/setup-docker.sh"
  local mirror; mirror="$(debian_mirror)"
  log "node rootfs: debootstrap $DEBIAN_SUITE from $mirror (cold: about 2 min)"
  local pk; pk="$(IFS=,; echo "${NODE_PACKAGES[*]}")"
  debootstrap --variant=minbase --include="$pk" "$DEBIAN_SUITE" "$rootfs" "$mirror" \
    > "$rootfs.debootstrap.log" 2>&1 || { tail -n 30 "$rootfs.debootstrap.log" >&2; die "debootstrap failed (log above)"; }

  # kind's base files, with the modes its Dockerfile gives them.
  install -m 0755 "$files"/usr/local/bin/* "$rootfs/usr/local/bin/"
  mkdir -p "$rootfs/kind/bin" "$rootfs/LICENSES"
  cp -r "$files/kind/." "$rootfs/kind/"
  find "$rootfs/kind" -type f -exec chmod 0644 {} + ; chmod 0755 "$rootfs/kind" "$rootfs/kind/bin" "$rootfs"/kind/bin/*
  install -m 0644 "$files"/LICENSES/* "$rootfs/LICENSES/"
  find "$files/etc" -maxdepth 1 -type f -exec install -m 0644 {} "$rootfs/etc/" \;
  install -D -m 0644 "$files/etc/containerd/config.toml" "$rootfs/etc/containerd/config.toml"
  install -m 0644 "$files"/etc/default/* "$rootfs/etc/default/"
  install -m 0644 "$files"/etc/sysctl.d/* "$rootfs/etc/sysctl.d/"
  install -m 0644 "$files"/etc/systemd/system/*.service "$files"/etc/systemd/system/*.slice "$rootfs/etc/systemd/system/"
  mkdir -p "$rootfs/etc/systemd/system/kubelet.service.d"
  install -m 0644 "$files"/etc/systemd/system/kubelet.service.d/* "$rootfs/etc/systemd/system/kubelet.service.d/"

  # Debian puts containerd and the CNI plugins where kind's files do not look.
  ln -sf /usr/bin/containerd "$rootfs/usr/local/bin/containerd"
  mkdir -p "$rootfs/opt/cni/bin"
  local p; for p in "$rootfs"/usr/lib/cni/*; do ln -sf "/usr/lib/cni/$(basename "$p")" "$rootfs/opt/cni/bin/"; done

  # kind's base Dockerfile: services, journald, init.
  find "$rootfs/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
  rm -f "$rootfs"/lib/systemd/system/multi-user.target.wants/* "$rootfs"/etc/systemd/system/*.wants/* \
        "$rootfs"/lib/systemd/system/local-fs.target.wants/* "$rootfs"/lib/systemd/system/sockets.target.wants/*udev* \
        "$rootfs"/lib/systemd/system/sockets.target.wants/*initctl* "$rootfs"/lib/systemd/system/basic.target.wants/*
  echo "ReadKMsg=no" >> "$rootfs/etc/systemd/journald.conf"
  [[ -e $rootfs/sbin/init ]] || ln -s /usr/lib/systemd/systemd "$rootfs/sbin/init"
  systemctl --root="$rootfs" enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1
  systemctl --root="$rootfs" mask systemd-binfmt.service >/dev/null 2>&1
  mkdir -p "$rootfs/etc/kubernetes/manifests"
  chroot "$rootfs" ctr oci spec \
    | jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
    | jq 'del(.process.rlimits)' > "$rootfs/etc/containerd/cri-base.json"

  # kindnetd cannot be pulled: a bridge network for the node's pods instead
  # (one node; the cluster config disables kind's default CNI).
  mkdir -p "$rootfs/etc/cni/net.d"
  cat > "$rootfs/etc/cni/net.d/10-gpupool-bridge.conflist" <<'EOF'
{
  "cniVersion": "1.0.0",
  "name": "gpupool-bridge",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF

  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs.debootstrap.log"
}

# rootfs_tarball: the rootfs, built once per input hash.
rootfs_tarball() {
  ROOTFS_TAR="$GPUPOOL_CACHE/kind-node-rootfs-$ROOTFS_KEY.tar"
  [[ -s $ROOTFS_TAR ]] && { log "node rootfs: cached ($ROOTFS_TAR)"; return; }
  new_scratch; local rootfs="$REPLY/rootfs"
  build_rootfs "$rootfs"
  tar --numeric-owner -C "$rootfs" -cf "$ROOTFS_TAR.tmp" .
  mv "$ROOTFS_TAR.tmp" "$ROOTFS_TAR"
  # Older builds' tarballs are of no further use.
  find "$GPUPOOL_CACHE" -maxdepth 1 -name 'kind-node-rootfs-*.tar' ! -name "kind-node-rootfs-$ROOTFS_KEY.tar" -delete
}

# --- component images ------------------------------------------------------

# import_image TAG ENTRYPOINT DIR: one layer holding DIR, no base image.
import_image() {
  local tag="$1" entry="$2" dir="$3"
  tar --numeric-owner --owner=0 --group=0 -C "$dir" -cf - . \
    | docker import --change "ENTRYPOINT [\"$entry\"]" - "$tag" >/dev/null
  IMAGES+=("$tag")
}

# single_binary_image TAG PATH-IN-IMAGE BINARY
single_binary_image() {
  new_scratch; local dir="$REPLY"
  install -D -m 0755 "$3" "$dir$2"
  import_image "$1" "$2" "$dir"
}

# kube-proxy programs iptables (nft backend, as the Debian node does) and
# conntrack; the xtables extensions are loaded at run time, so every one of
# them and every library they need goes in.
kube_proxy_image() {
  local rootfs="$1" dir
  new_scratch; dir="$REPLY"
  install -D -m 0755 "$KUBE_BIN_DIR/kube-proxy" "$dir/usr/local/bin/kube-proxy"
  local files=() f
  files+=(/usr/sbin/xtables-nft-multi /usr/sbin/xtables-legacy-multi /usr/sbin/conntrack)
  for f in "$rootfs"/usr/lib/x86_64-linux-gnu/xtables/*.so; do files+=("${f#"$rootfs"}"); done
  local libs
  libs="$(for f in "${files[@]}"; do chroot "$rootfs" ldd "$f" 2>/dev/null | awk '/=>/ {print $3} /^\t\// {print $1}'; done | sort -u)"
  # Merged /usr, as in the rootfs, so library paths through /lib resolve.
  mkdir -p "$dir/usr/lib" "$dir/usr/lib64" "$dir/usr/sbin"
  ln -s usr/lib "$dir/lib"; ln -s usr/lib64 "$dir/lib64"; ln -s usr/sbin "$dir/sbin"
  for f in "${files[@]}" $libs; do
    mkdir -p "$dir$(dirname "$f")"
    cp -L "$rootfs$f" "$dir$f" || die "kube-proxy image: cannot copy $f from the rootfs"
  done
  for f in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -sf xtables-nft-multi "$dir/usr/sbin/$f"
  done
  for f in iptables-legacy iptables-legacy-save iptables-legacy-restore ip6tables-legacy ip6tables-legacy-save ip6tables-legacy-restore; do
    ln -sf xtables-legacy-multi "$dir/usr/sbin/$f"
  done
  mkdir -p "$dir/var/lib/kube-proxy" "$dir/run/xtables.lock.d" "$dir/tmp"
  import_image "registry.k8s.io/kube-proxy:$KUBE_VERSION" /usr/local/bin/kube-proxy "$dir"
}

component_images() {
  local rootfs="$1" b
  IMAGES=()
  for b in kube-apiserver kube-controller-manager kube-scheduler; do
    single_binary_image "registry.k8s.io/$b:$KUBE_VERSION" "/usr/local/bin/$b" "$KUBE_BIN_DIR/$b"
  done
  kube_proxy_image "$rootfs"
  single_binary_image "registry.k8s.io/etcd:$ETCD_TAG" /usr/local/bin/etcd "$ETCD_BIN_DIR/etcd"
  single_binary_image "registry.k8s.io/coredns/coredns:$COREDNS_VERSION" /coredns "$COREDNS_BIN"
  local t; for t in "${PAUSE_TAGS[@]}"; do single_binary_image "registry.k8s.io/pause:$t" /pause "$PAUSE_BIN"; done
}

# check_kubeadm_images: every image kubeadm will ask for is among ours, so
# the node never tries a registry.
check_kubeadm_images() {
  local want missing=()
  for want in $("$KUBE_BIN_DIR/kubeadm" config images list --kubernetes-version "$KUBE_VERSION" 2>/dev/null); do
    [[ " ${IMAGES[*]} " == *" $want "* ]] || missing+=("$want")
  done
  [[ ${#missing[@]} -eq 0 ]] || die "kubeadm $KUBE_VERSION asks for images this script does not build: ${missing[*]} (update COREDNS_VERSION, PAUSE_TAGS or ETCD_TAG)"
}

# --- assembly ---------------------------------------------------------------

main() {
  preflight
  KIND_FILES="$(kind_files)"
  [[ -d $KIND_FILES ]] || die "kind $KIND_VERSION base files not found in the module cache"
  ROOTFS_KEY="$(rootfs_hash)"
  KEY="$(image_hash)"
  IMAGE="gpupool/kind-node:$KUBE_VERSION-$KEY"
  if docker image inspect "$IMAGE" >/dev/null 2>&1; then
    log "kind node image: cached ($IMAGE)"
    finish; return
  fi
  local started=$SECONDS
  mkdir -p "$GPUPOOL_CACHE"
  bash "$ROOT/hack/build-control-plane.sh" all
  bash "$ROOT/hack/build-control-plane.sh" node
  build_coredns
  build_pause
  # kubeadm's etcd tag is the etcd version with a "-0" image revision.
  ETCD_TAG="${ETCD_VERSION#v}-0"

  rootfs_tarball
  new_scratch; local rootfs="$REPLY/rootfs"; mkdir -p "$rootfs"
  tar -C "$rootfs" -xf "$ROOTFS_TAR"

  log "kind node image: component images (control plane, kube-proxy, etcd $ETCD_TAG, coredns $COREDNS_VERSION, pause)"
  component_images "$rootfs"
  check_kubeadm_images

  local base="gpupool/kind-node-base:$KEY"
  log "kind node image: importing the rootfs as $base"
  docker import \
    --change 'ENV container=docker' \
    --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
    "$ROOTFS_TAR" "$base" >/dev/null
  local preload=("${IMAGES[@]}")
  IMAGES+=("$base")

  # Preload: containerd in a stopped-down node container imports the images
  # (pinned, so the kubelet's image GC never drops them), then the
  # container becomes the image.
  log "kind node image: preloading ${#preload[@]} images into the node's containerd"
  local c="gpupool-kind-build-$KEY-$$"
  CONTAINERS+=("$c")
  docker run -d --name "$c" --privileged --entrypoint sleep "$base" infinity >/dev/null
  docker exec -d "$c" sh -c 'containerd >/var/log/containerd-build.log 2>&1'
  local deadline=$((SECONDS + 60))
  until docker exec "$c" ctr --timeout 2s version >/dev/null 2>&1; do
    (( SECONDS < deadline )) || die "containerd in the build container did not answer within 60 s: $(docker exec "$c" tail -n 5 /var/log/containerd-build.log)"
    sleep 0.5
  done
  # Kubernetes node binaries where kind's units expect them.
  local b; for b in kubelet kubeadm kubectl; do docker cp "$KUBE_BIN_DIR/$b" "$c:/usr/bin/$b"; done
  docker exec "$c" sh -c "chown root:root /usr/bin/kubelet /usr/bin/kubeadm /usr/bin/kubectl && printf '%s' '$KUBE_VERSION' > /kind/version"
  docker save "${preload[@]}" | docker exec -i "$c" ctr -n k8s.io images import --no-unpack --digests - >/dev/null
  # Pinned: containerd 1.7+ tells the kubelet's image GC to keep them
  # (Debian's ctr 1.6 cannot label on import).
  local img; for img in "${preload[@]}"; do
    docker exec "$c" ctr -n k8s.io images label "$img" io.cri-containerd.pinned=pinned >/dev/null
  done
  docker exec "$c" sh -c 'pkill containerd; while pgrep -x containerd >/dev/null; do sleep 0.2; done; rm -f /var/log/containerd-build.log'
  docker commit \
    --change 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]' \
    --change 'ENV container=docker' \
    "$c" "$IMAGE" >/dev/null
  log "kind node image: built $IMAGE in $((SECONDS - started)) s"
  finish
}

finish() {
  # Older gpupool node images are of no further use.
  docker images --format '{{.Repository}}:{{.Tag}}' 'gpupool/kind-node' | grep -vx "$IMAGE" | xargs -r docker rmi >/dev/null 2>&1 || true
  printf '%s\n' "$IMAGE" > "$GPUPOOL_CACHE/kind-node-image"
  printf '%s\n' "$IMAGE"
}

main "$@"

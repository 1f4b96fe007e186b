#!/usr/bin/env bash
# Copyright 2026 The gpupool Authors.
# SPDX-License-Identifier: Apache-2.0
# Builds every binary the embedded cluster runs, from Go modules only, into a
# cache keyed by version. Anything already built is skipped, so a warm run
# costs a few stat calls. Prints nothing but progress on stderr.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/hack/lib.sh"

# Scratch dirs live beside the cache (same filesystem, so mv is atomic) and
# are removed on any exit, including Ctrl-C.
SCRATCH=()
cleanup() { [[ ${#SCRATCH[@]} -eq 0 ]] || rm -rf "${SCRATCH[@]}"; }
trap cleanup EXIT
new_scratch() { local d; d="$(mktemp -d "$GPUPOOL_CACHE/.build.XXXXXX")"; SCRATCH+=("$d"); REPLY="$d"; }

# kube_build BIN... : builds k8s.io/kubernetes commands into KUBE_BIN_DIR,
# skipping it when all are there.
kube_build() {
  local bins=("$@")
  if have_all "$KUBE_BIN_DIR" "${bins[@]}"; then
    log "kubernetes $KUBE_VERSION: ${bins[*]} cached in $KUBE_BIN_DIR"; return
  fi
  local v="${KUBE_VERSION#v}" major minor
  major="${v%%.*}"; minor="${v#*.}"; minor="${minor%%.*}"
  # Same -X flags as upstream's hack/lib/version.sh, so /version says v1.37.2.
  local ldflags="-s -w" key val
  for kv in "gitVersion=$KUBE_VERSION" "gitMajor=$major" "gitMinor=$minor" \
            "gitTreeState=clean" "gitCommit=module-$KUBE_VERSION" \
            "buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"; do
    key="${kv%%=*}"; val="${kv#*=}"
    ldflags+=" -X k8s.io/client-go/pkg/version.$key=$val -X k8s.io/component-base/version.$key=$val"
  done
  log "kubernetes $KUBE_VERSION: building ${bins[*]} (cold: about 8 min on 2 cores)"
  new_scratch; local tmp="$REPLY" pkgs=() b
  for b in "${bins[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  # Static like upstream's release binaries: the kind node image has no Go runtime deps.
  (cd "$ROOT/hack/tools" && CGO_ENABLED=0 with_progress "kubernetes $KUBE_VERSION" go build -v -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}")
  mkdir -p "$KUBE_BIN_DIR"
  for b in "${bins[@]}"; do mv "$tmp/$b" "$KUBE_BIN_DIR/$b"; done
  log "kubernetes $KUBE_VERSION: built ${bins[*]} into $KUBE_BIN_DIR"
}

build_kubernetes() { kube_build kube-apiserver kube-controller-manager kube-scheduler; }

# What a kind node runs besides the control plane.
build_node() { kube_build kubelet kubeadm kubectl kube-proxy; }

build_etcd() {
  if have_all "$ETCD_BIN_DIR" etcd; then log "etcd $ETCD_VERSION: cached"; return; fi
  log "etcd $ETCD_VERSION: building"
  mkdir -p "$ETCD_BIN_DIR"
  (cd "$ROOT/hack/tools" && CGO_ENABLED=0 with_progress "etcd $ETCD_VERSION" go build -v -trimpath -ldflags "-s -w" -o "$ETCD_BIN_DIR/etcd.tmp" ./etcd)
  mv "$ETCD_BIN_DIR/etcd.tmp" "$ETCD_BIN_DIR/etcd"
}

# go install into a temp GOBIN, then move: a killed build never leaves a
# half-written binary that the cache check would take for a finished one.
go_install() {
  local dest="$1"; shift
  new_scratch; local tmp="$REPLY"
  with_progress "${1%@*}" env CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS=-trimpath go install -v -ldflags "-s -w" "$@"
  mkdir -p "$dest"
  mv "$tmp"/* "$dest/"
}

# kwok is built in the tools module (hack/tools/tools.go says why), so the
# version is the one its go.mod pins.
build_kwok() {
  if have_all "$KWOK_BIN_DIR" kwok kwokctl; then log "kwok $KWOK_VERSION: cached"; return; fi
  local pinned
  pinned="$(cd "$ROOT/hack/tools" && go list -m -f '{{.Version}}' sigs.k8s.io/kwok)"
  if [[ "$pinned" != "$KWOK_VERSION" ]]; then
    echo "KWOK_VERSION is $KWOK_VERSION but hack/tools/go.mod pins sigs.k8s.io/kwok $pinned: change it there (go get sigs.k8s.io/kwok@$KWOK_VERSION)" >&2
    exit 2
  fi
  log "kwok $KWOK_VERSION: building kwok and kwokctl"
  new_scratch; local tmp="$REPLY"
  (cd "$ROOT/hack/tools" && CGO_ENABLED=0 with_progress "kwok $KWOK_VERSION" go build -v -trimpath -ldflags "-s -w" -o "$tmp/" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl)
  mkdir -p "$KWOK_BIN_DIR"
  mv "$tmp"/* "$KWOK_BIN_DIR/"
}

# Karpenter with its KWOK cloud provider, from gpupool's own main in its
# own module (hack/tools/karpenter/cmd/karpenter-kwok says why), as
# karpenter-kwok. Cached by version, and built again when that module's
# sources change (the stamp is their hash).
build_karpenter() {
  local stamp
  stamp="$(cd "$ROOT/hack/tools/karpenter" && find . -type f \( -name '*.go' -o -name 'go.mod' -o -name 'go.sum' \) -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)"
  if have_all "$KARPENTER_BIN_DIR" karpenter-kwok && [[ "$(cat "$KARPENTER_BIN_DIR/sources" 2>/dev/null)" == "$stamp" ]]; then
    log "karpenter $KARPENTER_VERSION: cached"; return
  fi
  local pinned
  pinned="$(cd "$ROOT/hack/tools/karpenter" && go list -m -f '{{.Version}}' sigs.k8s.io/karpenter)"
  if [[ "$pinned" != "$KARPENTER_VERSION" ]]; then
    echo "KARPENTER_VERSION is $KARPENTER_VERSION but hack/tools/karpenter/go.mod pins sigs.k8s.io/karpenter $pinned: change it there (go get sigs.k8s.io/karpenter@$KARPENTER_VERSION)" >&2
    exit 2
  fi
  log "karpenter $KARPENTER_VERSION: building it with its KWOK cloud provider"
  new_scratch; local tmp="$REPLY"
  (cd "$ROOT/hack/tools/karpenter" && CGO_ENABLED=0 with_progress "karpenter $KARPENTER_VERSION" go build -v -trimpath -ldflags "-s -w" -o "$tmp/karpenter-kwok" ./cmd/karpenter-kwok)
  mkdir -p "$KARPENTER_BIN_DIR"
  mv "$tmp/karpenter-kwok" "$KARPENTER_BIN_DIR/"
  echo "$stamp" > "$KARPENTER_BIN_DIR/sources"
}

build_kind() {
  if have_all "$KIND_BIN_DIR" kind; then log "kind $KIND_VERSION: cached"; return; fi
  log "kind $KIND_VERSION: building"
  go_install "$KIND_BIN_DIR" "sigs.k8s.io/kind@$KIND_VERSION"
}

mkdir -p "$GPUPOOL_CACHE"
what="${1:-all}"
case "$what" in
  all) build_etcd; build_kwok; build_kubernetes ;;
  kubernetes) build_kubernetes ;;
  etcd) build_etcd ;;
  kwok) build_kwok ;;
  karpenter) build_karpenter ;;
  node) build_node ;;
  kind) build_kind ;;
  *) echo "usage: $0 [all|kubernetes|etcd|kwok|karpenter|node|kind]" >&2; exit 2 ;;
esac

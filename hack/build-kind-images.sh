#!/usr/bin/env bash
# Copyright 2026 The gpupool Authors.
# SPDX-License-Identifier: Apache-2.0
# Builds the images gpupool loads into a kind cluster, each one layer with a
# static binary and no base (nothing to pull):
#   gpupool/kwok:<version>                  the kwok controller for the fleet's KWOK nodes
#   gpupool/fake-device-plugin:<hash>       cmd/fake-device-plugin, the kubelet device plugin
#   gpupool/fake-dra-plugin:<hash>          cmd/fake-dra-plugin, the DRA kubelet plugin
#   gpupool/fakegpu-controller:<hash>       cmd/fakegpu-controller, the simulated GPU Operator
#   gpupool/karpenter-kwok:<version>-<hash> Karpenter's KWOK provider, run from its own chart
#   nvidia/cuda:gpupool-probe-<hash>        the fake device plugin's probe under a CUDA image's
#                                           name and ENV (NVIDIA_VISIBLE_DEVICES=all, access §2.1):
#                                           what a tenant's GPU image carries, for the differential
# Tags carry the binary's hash, so an unchanged binary is not re-imported.
# Writes "name=image" lines to $GPUPOOL_CACHE/kind-images for the harness.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/hack/lib.sh"

command -v docker >/dev/null && docker info >/dev/null 2>&1 || { log "build-kind-images: the Docker engine does not answer; run hack/setup-docker.sh"; exit 1; }
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT

# image NAME TAG-PREFIX BINARY ENTRYPOINT [ENV...]: imports the binary as
# NAME:<prefix><hash>, with the ENV lines given.
image() {
  local name="$1" prefix="$2" bin="$3" entry="$4" sum tag
  local changes=(--change "ENTRYPOINT [\"$entry\"]") e
  for e in "${@:5}"; do changes+=(--change "ENV $e"); done
  sum="$(sha256sum "$bin" | cut -c1-12)"
  tag="$name:$prefix$sum"
  if ! docker image inspect "$tag" >/dev/null 2>&1; then
    local dir="$SCRATCH/root-$(basename "$name")"
    mkdir -p "$dir"; install -m 0755 "$bin" "$dir$entry"
    tar --numeric-owner --owner=0 --group=0 -C "$dir" -cf - . \
      | docker import "${changes[@]}" - "$tag" >/dev/null
    # Older builds of the same image are of no further use. Outside
    # gpupool/ only our own tags go: nvidia/cuda may hold the user's images.
    local ours="$name:.*"
    [[ $name == gpupool/* ]] || ours="$name:$prefix.*"
    docker images --format '{{.Repository}}:{{.Tag}}' "$name" | grep -x "$ours" | grep -vx "$tag" | xargs -r docker rmi >/dev/null 2>&1 || true
    log "build-kind-images: $tag"
  fi
  REPLY="$tag"
}

bash "$ROOT/hack/build-control-plane.sh" kwok
image gpupool/kwok "$KWOK_VERSION-" "$KWOK_BIN_DIR/kwok" /kwok; kwok="$REPLY"

bash "$ROOT/hack/build-control-plane.sh" karpenter
image gpupool/karpenter-kwok "$KARPENTER_VERSION-" "$KARPENTER_BIN_DIR/karpenter-kwok" /karpenter-kwok; karpenter="$REPLY"

(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$SCRATCH/fake-device-plugin" ./cmd/fake-device-plugin)
image gpupool/fake-device-plugin "" "$SCRATCH/fake-device-plugin" /fake-device-plugin; plugin="$REPLY"

# The tag prefix is harness.CUDAProbeTag.
image nvidia/cuda "gpupool-probe-" "$SCRATCH/fake-device-plugin" /fake-device-plugin \
  NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility; cudaprobe="$REPLY"

(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$SCRATCH/fake-dra-plugin" ./cmd/fake-dra-plugin)
image gpupool/fake-dra-plugin "" "$SCRATCH/fake-dra-plugin" /fake-dra-plugin; draplugin="$REPLY"

(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$SCRATCH/fakegpu-controller" ./cmd/fakegpu-controller)
image gpupool/fakegpu-controller "" "$SCRATCH/fakegpu-controller" /fakegpu-controller; controller="$REPLY"

printf 'kwok=%s\ndevice-plugin=%s\ndra-plugin=%s\nfakegpu-controller=%s\ncuda-probe=%s\nkarpenter=%s\n' "$kwok" "$plugin" "$draplugin" "$controller" "$cudaprobe" "$karpenter" > "$GPUPOOL_CACHE/kind-images.tmp"
mv "$GPUPOOL_CACHE/kind-images.tmp" "$GPUPOOL_CACHE/kind-images"
cat "$GPUPOOL_CACHE/kind-images"

#!/usr/bin/env bash
# Copyright 2026 The gpupool Authors.
# SPDX-License-Identifier: Apache-2.0
# Copies the upstream files the harness uses, byte for byte, from each Go
# module at the version e2e/upstream/upstream.go pins into
# e2e/upstream/<name>/<same path>, with the module's LICENSE, and writes
# e2e/upstream/<name>/SOURCE: module, version and each file's sha256.
# The gpupool binary embeds the copies, so a run needs no Go toolchain.
#   gpu-operator: the ClusterPolicy CRD, its sample, the default MIG config,
#                 and its Helm chart (deployments/gpu-operator, every file)
#   karpenter:    the CRDs of Karpenter and of its KWOK provider, and the
#                 provider's Helm chart (kwok/charts, every file), which a
#                 kind run installs Karpenter from
# To move to another version: change the pin in upstream.go, run this
# script, commit both.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/hack/lib.sh"

UPSTREAM="$ROOT/e2e/upstream"

# const NAME = "VALUE" in upstream.go.
pin() {
  local v
  v="$(sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\"\(.*\)\"\$/\1/p" "$UPSTREAM/upstream.go")"
  [[ -n "$v" ]] || { log "update-upstream: no $1 = \"...\" in $UPSTREAM/upstream.go"; exit 1; }
  printf '%s' "$v"
}

SCRATCH=""
trap '[[ -z "$SCRATCH" ]] || rm -rf "$SCRATCH"' EXIT

# copy NAME MODULE VERSION FILE...: the files into e2e/upstream/NAME.
copy() {
  local name="$1" module="$2" version="$3"; shift 3
  local dest="$UPSTREAM/$name" info moddir f
  # go mod download prints a JSON object; Error is set when it fails.
  info="$(cd "$ROOT" && go mod download -json "$module@$version")" || { log "update-upstream: go mod download $module@$version failed: $info"; exit 1; }
  moddir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$info")"
  [[ -n "$moddir" && -d "$moddir" ]] || { log "update-upstream: go mod download $module@$version gave no module directory: $info"; exit 1; }
  SCRATCH="$(mktemp -d "$UPSTREAM/.$name.XXXXXX")"
  {
    printf '# Unmodified files of %s, copied by hack/update-upstream.sh: do not edit.\n' "$module"
    printf 'module %s\n' "$module"
    printf 'version %s\n' "$version"
  } >"$SCRATCH/SOURCE"
  # A directory stands for every file under it, in a stable order.
  local files=()
  for f in "$@"; do
    if [[ -d "$moddir/$f" ]]; then
      mapfile -t -O "${#files[@]}" files < <(cd "$moddir" && find "${f%/}" -type f | LC_ALL=C sort)
    else
      files+=("$f")
    fi
  done
  for f in "${files[@]}" LICENSE; do
    [[ -f "$moddir/$f" ]] || { log "update-upstream: $module@$version has no $f"; exit 1; }
    # install, not cp: the module cache's files are read-only, the copies not.
    install -D -m 0644 "$moddir/$f" "$SCRATCH/$f"
    cmp -s "$moddir/$f" "$SCRATCH/$f" || { log "update-upstream: copy of $f differs"; exit 1; }
    printf 'sha256 %s %s\n' "$(sha256sum "$SCRATCH/$f" | cut -d' ' -f1)" "$f" >>"$SCRATCH/SOURCE"
  done
  chmod 0755 "$SCRATCH"
  rm -rf "$dest"
  mv "$SCRATCH" "$dest"
  SCRATCH=""
  log "update-upstream: $module@$version -> ${dest#"$ROOT/"}"
}

copy gpu-operator "$(pin 'const GPUOperatorModule')" "$(pin 'const gpuOperatorVersion')" \
  config/crd/bases/nvidia.com_clusterpolicies.yaml \
  config/samples/v1_clusterpolicy.yaml \
  assets/state-mig-manager/0400_configmap.yaml \
  deployments/gpu-operator/

copy karpenter "$(pin 'const KarpenterModule')" "$(pin 'const karpenterVersion')" \
  kwok/charts/ \
  kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml

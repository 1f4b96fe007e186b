#!/usr/bin/env bash
# Copies the GPU Operator files the harness uses, byte for byte, from the Go
# module at the version e2e/upstream/upstream.go pins into
# e2e/upstream/gpu-operator/<same path>, with the module's LICENSE, and writes
# e2e/upstream/gpu-operator/SOURCE: module, version and each file's sha256.
# The gpupool binary embeds the copies, so a run needs no Go toolchain.
# To move to another GPU Operator version: change gpuOperatorVersion in
# upstream.go, run this script, commit both.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/hack/lib.sh"

UPSTREAM="$ROOT/e2e/upstream"
DEST="$UPSTREAM/gpu-operator"
FILES=(
  config/crd/bases/nvidia.com_clusterpolicies.yaml
  config/samples/v1_clusterpolicy.yaml
  assets/state-mig-manager/0400_configmap.yaml
  LICENSE
)

# const NAME = "VALUE" in upstream.go.
pin() {
  local v
  v="$(sed -n "s/^[[:space:]]*$1[[:space:]]*=[[:space:]]*\"\(.*\)\"\$/\1/p" "$UPSTREAM/upstream.go")"
  [[ -n "$v" ]] || { log "update-upstream: no $1 = \"...\" in $UPSTREAM/upstream.go"; exit 1; }
  printf '%s' "$v"
}
MODULE="$(pin 'const GPUOperatorModule')"
VERSION="$(pin 'const gpuOperatorVersion')"

# go mod download prints a JSON object; Error is set when it fails.
INFO="$(cd "$ROOT" && go mod download -json "$MODULE@$VERSION")" || { log "update-upstream: go mod download $MODULE@$VERSION failed: $INFO"; exit 1; }
MODDIR="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$INFO")"
[[ -n "$MODDIR" && -d "$MODDIR" ]] || { log "update-upstream: go mod download $MODULE@$VERSION gave no module directory: $INFO"; exit 1; }

SCRATCH="$(mktemp -d "$UPSTREAM/.gpu-operator.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
{
  printf '# Unmodified files of %s, copied by hack/update-upstream.sh: do not edit.\n' "$MODULE"
  printf 'module %s\n' "$MODULE"
  printf 'version %s\n' "$VERSION"
} >"$SCRATCH/SOURCE"
for f in "${FILES[@]}"; do
  [[ -f "$MODDIR/$f" ]] || { log "update-upstream: $MODULE@$VERSION has no $f"; exit 1; }
  # install, not cp: the module cache's files are read-only, the copies not.
  install -D -m 0644 "$MODDIR/$f" "$SCRATCH/$f"
  cmp -s "$MODDIR/$f" "$SCRATCH/$f" || { log "update-upstream: copy of $f differs"; exit 1; }
  printf 'sha256 %s %s\n' "$(sha256sum "$SCRATCH/$f" | cut -d' ' -f1)" "$f" >>"$SCRATCH/SOURCE"
done
chmod 0755 "$SCRATCH"
rm -rf "$DEST"
mv "$SCRATCH" "$DEST"
log "update-upstream: $MODULE@$VERSION -> ${DEST#"$ROOT/"}"

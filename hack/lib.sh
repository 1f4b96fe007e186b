# Copyright 2026 The gpupool Authors.
# SPDX-License-Identifier: Apache-2.0
# Shared settings for hack/ scripts. Sourced, not run.
# Versions are pinned here and nowhere else.
KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.0}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
KIND_VERSION="${KIND_VERSION:-v0.33.0}"
KARPENTER_VERSION="${KARPENTER_VERSION:-v1.14.1}"

# Build cache: outside the work tree so every clone on this machine (CI's too)
# reuses what was built; keyed by version so a bump builds fresh.
GPUPOOL_CACHE="${GPUPOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpupool}"
KUBE_BIN_DIR="$GPUPOOL_CACHE/kubernetes-$KUBE_VERSION"
ETCD_BIN_DIR="$GPUPOOL_CACHE/etcd-$ETCD_VERSION"
KWOK_BIN_DIR="$GPUPOOL_CACHE/kwok-$KWOK_VERSION"
KIND_BIN_DIR="$GPUPOOL_CACHE/kind-$KIND_VERSION"
KARPENTER_BIN_DIR="$GPUPOOL_CACHE/karpenter-$KARPENTER_VERSION"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# have_all DIR NAME... : true when every NAME is an executable in DIR.
have_all() {
  local dir="$1"; shift
  local n
  for n in "$@"; do [[ -x "$dir/$n" ]] || return 1; done
}

# with_progress WHAT CMD...: runs CMD (a go build or install, given -v so
# it names each package it compiles) and says every 10 s what is being
# built, how many packages are done and for how long: a cold build runs for
# minutes. CMD's other output is printed when it ends; its status is
# returned.
with_progress() {
  local what="$1"; shift
  local out start pid rc n
  out="$(mktemp "${TMPDIR:-/tmp}/gpupool-build.XXXXXX")"
  start=$(date +%s)
  "$@" >"$out" 2>&1 &
  pid=$!
  local ticks=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    ticks=$((ticks + 1))
    if (( ticks % 10 == 0 )) && kill -0 "$pid" 2>/dev/null; then
      n=$(grep -c -v '^#\|^go: ' "$out" 2>/dev/null || true)
      log "$what: still building, ${n:-0} packages compiled, $(( $(date +%s) - start ))s so far"
    fi
  done
  if wait "$pid"; then rc=0; else rc=$?; fi
  # -v's package names are progress, not news; anything else is, and a
  # failed build shows everything it said.
  if [[ $rc -ne 0 ]]; then cat "$out" >&2; else grep -v '^[a-zA-Z0-9._/~-]*$' "$out" >&2 || true; fi
  rm -f "$out"
  return "$rc"
}

# with_progress_x WHAT CMD...: with_progress for a build that cannot name
# its packages (`go test -c` prints none under -v): CMD must be given -x,
# and what is counted is the compiler runs it logs; on success its log is
# dropped (it is only commands), on failure its tail is shown.
with_progress_x() {
  local what="$1"; shift
  local out start pid rc n ticks=0
  out="$(mktemp "${TMPDIR:-/tmp}/gpupool-build.XXXXXX")"
  start=$(date +%s)
  "$@" >"$out" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    ticks=$((ticks + 1))
    if (( ticks % 10 == 0 )) && kill -0 "$pid" 2>/dev/null; then
      n=$(grep -c '/compile -o' "$out" 2>/dev/null || true)
      log "$what: still building, ${n:-0} packages compiled, $(( $(date +%s) - start ))s so far"
    fi
  done
  if wait "$pid"; then rc=0; else rc=$?; fi
  # A failed build's errors are at the end of its log of commands.
  [[ $rc -eq 0 ]] || tail -n 60 "$out" >&2
  rm -f "$out"
  return "$rc"
}

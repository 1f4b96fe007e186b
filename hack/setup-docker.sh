#!/usr/bin/env bash
# Copyright 2026 The gpupool Authors.
# SPDX-License-Identifier: Apache-2.0
# Makes a Docker engine available for kind, from Debian's packages only:
#   - uses the engine that answers `docker info`, if one does;
#   - otherwise installs docker.io (and the tools the node image build
#     needs) where the engine is missing, and starts dockerd;
#   - where the capability bounding set lacks CAP_SYS_RESOURCE (some VMs),
#     `docker run --privileged` fails with "unable to apply caps"; then
#     dockerd's default runtime becomes a wrapper that drops that one
#     capability from what runc is asked to grant. Said when applied.
# Idempotent: a second run finds the engine up and does nothing.
# --stop ends the dockerd this script started, if any (CI calls it last).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/hack/lib.sh"

DOCKER_LOG="${DOCKER_LOG:-/var/log/gpupool-dockerd.log}"
# Written when this script starts dockerd, so `--stop` ends only an engine
# it started (CI's), never one the machine already ran.
STARTED="$GPUPOOL_CACHE/dockerd.started"
WRAPPER=/usr/local/libexec/gpupool/runc-drop-sys-resource
DAEMON_JSON=/etc/docker/daemon.json

need_root() {
  if [[ $(id -u) -ne 0 ]]; then
    log "setup-docker: $1 needs root; run: sudo $0"; exit 1
  fi
}

engine_up() { docker info >/dev/null 2>&1; }

# CAP_SYS_RESOURCE is capability 24.
bounding_lacks_sys_resource() {
  local bnd; bnd="$(awk '/^CapBnd:/ {print $2}' /proc/self/status)"
  (( (16#$bnd >> 24 & 1) == 0 ))
}

install_packages() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v jq >/dev/null || missing+=(jq)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  [[ ${#missing[@]} -eq 0 ]] && return
  need_root "installing ${missing[*]}"
  log "setup-docker: installing ${missing[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  # No init system here to start services: keep the packages' scripts from trying.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' RETURN
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

install_cap_workaround() {
  need_root "the CAP_SYS_RESOURCE workaround"
  log "setup-docker: this machine's capability bounding set lacks CAP_SYS_RESOURCE;" \
      "dockerd's default runtime becomes $WRAPPER (runc without that capability)"
  mkdir -p "$(dirname "$WRAPPER")" /etc/docker
  cat > "$WRAPPER.tmp" <<'EOF'
#!/bin/sh
# runc, minus CAP_SYS_RESOURCE, which this machine cannot grant: removed
# from the bundle's config.json on create/run and from the process spec
# that `docker exec` passes (--process FILE). Written by gpupool's
# hack/setup-docker.sh.
strip() {
  [ -f "$1" ] || return 0
  jq 'walk(if type == "array" then map(select(. != "CAP_SYS_RESOURCE")) else . end)' "$1" > "$1.gpupool" && mv "$1.gpupool" "$1"
}
bundle=; process=; cmd=; prev=
for a in "$@"; do
  case "$prev" in
    --bundle|-b) bundle=$a ;;
    --process|-p) process=$a ;;
  esac
  case "$a" in
    --bundle=*) bundle=${a#--bundle=} ;;
    --process=*) process=${a#--process=} ;;
    create|run|exec) [ -z "$cmd" ] && cmd=$a ;;
  esac
  prev=$a
done
case "$cmd" in
  create|run) [ -n "$bundle" ] && strip "$bundle/config.json" ;;
  exec) [ -n "$process" ] && strip "$process" ;;
esac
exec runc "$@"
EOF
  chmod +x "$WRAPPER.tmp"; mv "$WRAPPER.tmp" "$WRAPPER"
  local cur='{}'
  [[ -s $DAEMON_JSON ]] && cur="$(cat "$DAEMON_JSON")"
  jq --arg p "$WRAPPER" '.runtimes["gpupool-runc"] = {path: $p} | .["default-runtime"] = "gpupool-runc"' \
    <<<"$cur" > "$DAEMON_JSON.tmp"
  mv "$DAEMON_JSON.tmp" "$DAEMON_JSON"
}

start_dockerd() {
  need_root "starting dockerd"
  log "setup-docker: starting dockerd (log: $DOCKER_LOG)"
  # Its own session, so it outlives this script and the make that ran it.
  setsid dockerd >>"$DOCKER_LOG" 2>&1 < /dev/null &
  mkdir -p "$GPUPOOL_CACHE"; echo $! > "$STARTED"
  local deadline=$((SECONDS + 60))
  until engine_up; do
    if (( SECONDS > deadline )); then
      log "setup-docker: dockerd did not answer within 60 s; last lines of $DOCKER_LOG:"
      tail -n 20 "$DOCKER_LOG" >&2; exit 1
    fi
    sleep 0.5
  done
}

stop_started() {
  [[ -s $STARTED ]] || return 0
  local pid; pid="$(cat "$STARTED")"
  rm -f "$STARTED"
  kill -0 "$pid" 2>/dev/null || return 0
  log "setup-docker: stopping the dockerd it started (pid $pid)"
  kill "$pid"
  local deadline=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null; do
    (( SECONDS < deadline )) || { log "setup-docker: dockerd (pid $pid) did not stop within 30 s"; return 1; }
    sleep 0.2
  done
}

if [[ ${1:-} == --stop ]]; then
  stop_started; exit
fi

if engine_up; then
  install_packages
  log "setup-docker: engine up ($(docker version -f '{{.Server.Version}}' 2>/dev/null))"
  exit 0
fi
install_packages
if bounding_lacks_sys_resource; then
  install_cap_workaround
fi
if ! engine_up; then
  start_dockerd
fi
log "setup-docker: engine up ($(docker version -f '{{.Server.Version}}'))"

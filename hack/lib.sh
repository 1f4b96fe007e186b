# Shared settings for hack/ scripts. Sourced, not run.
# Versions are pinned here and nowhere else.
KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.0}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
KIND_VERSION="${KIND_VERSION:-v0.33.0}"

# Build cache: outside the work tree so every clone on this machine (CI's too)
# reuses what was built; keyed by version so a bump builds fresh.
GPUPOOL_CACHE="${GPUPOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpupool}"
KUBE_BIN_DIR="$GPUPOOL_CACHE/kubernetes-$KUBE_VERSION"
ETCD_BIN_DIR="$GPUPOOL_CACHE/etcd-$ETCD_VERSION"
KWOK_BIN_DIR="$GPUPOOL_CACHE/kwok-$KWOK_VERSION"
KIND_BIN_DIR="$GPUPOOL_CACHE/kind-$KIND_VERSION"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# have_all DIR NAME... : true when every NAME is an executable in DIR.
have_all() {
  local dir="$1"; shift
  local n
  for n in "$@"; do [[ -x "$dir/$n" ]] || return 1; done
}

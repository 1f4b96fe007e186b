#!/usr/bin/env bash
# Copyright 2026 The gpupool Authors.
# SPDX-License-Identifier: Apache-2.0
# beside.sh LOG BACKGROUND FOREGROUND: runs the command BACKGROUND, its
# output to LOG, while FOREGROUND runs on the console; then prints LOG and
# fails if either failed. make test runs the kind path (mostly waiting on a
# real kubelet, 60% of the CPU idle) and the tests that need a cluster
# beside the embedded mutants (CPU-bound) this way. Ctrl-C, a kill or a failure stops the background command with
# SIGINT, so it removes what it made, and waits for it.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

bglog=$1 bg=$2 fg=$3
mkdir -p "$(dirname "$bglog")"
fglog=$(mktemp "${TMPDIR:-/tmp}/gpupool-beside.XXXXXX")

# Its own process group: a terminal's Ctrl-C reaches it only through the
# trap, after which it is waited for.
setsid bash -c 'start=$(date +%s); bash -c "$1"; rc=$?; echo "[$(date +%T)] beside: the background command ended (rc $rc) after $(($(date +%s) - start)) s"; exit $rc' beside "$bg" >"$bglog" 2>&1 &
bgpid=$!
stop() {
	if kill -0 "$bgpid" 2>/dev/null; then
		log "beside: stopping '$bg' (pid $bgpid)"
		kill -INT -- "-$bgpid" 2>/dev/null
		wait "$bgpid" 2>/dev/null
	fi
	rm -f "$fglog"
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

log "beside: '$bg' runs beside '$fg'; its output goes to $bglog and is printed when both end"
start=$(date +%s)
bash -c "$fg" 2>&1 | tee "$fglog"
fgrc=${PIPESTATUS[0]}
log "beside: '$fg' ended (rc $fgrc) after $(($(date +%s) - start)) s; waiting for '$bg'"
wait "$bgpid"
bgrc=$?
log "beside: '$bg' ended (rc $bgrc) after $(($(date +%s) - start)) s; its output:"
cat "$bglog"
if [ "$fgrc" -ne 0 ]; then
	# A CI log keeps its tail: the foreground's failure goes last.
	log "beside: '$fg' FAILED (rc $fgrc); the end of its output:"
	tail -n 60 "$fglog"
fi
[ "$fgrc" -eq 0 ] && [ "$bgrc" -eq 0 ]

#!/usr/bin/env bash
# Copyright 2026 The gpupool Authors.
# SPDX-License-Identifier: Apache-2.0
# Installs Debian's Chromium if it is missing: make test opens a run's
# report.html in it (headless, through chromedp) to assert on what a person
# sees. Needs root once, as hack/setup-docker.sh does.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
	exit 0
fi
echo "[$(date +%T)] installing chromium (Debian package) for the report's browser test"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null

#!/usr/bin/env bash
# Installs what is missing, builds, and starts the daemon on http://127.0.0.1:8080 with mock
# devices (no GPU engine is built yet). Extra arguments go to `kernelscan serve`, e.g.
#   deploy/run.sh --mock-devices 2 --mock-model H100
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_missing "${KERNELSCAN_PACKAGES[@]}"
install_web_packages
build_kernelscan
cd "$KERNELSCAN_ROOT"
exec "$KERNELSCAN_ROOT/build/server/kernelscan" serve "$@"

#!/usr/bin/env bash
# Installs what is missing, builds the daemon alone (with the GPU engine where hipcc or nvcc is
# installed; not the tests, which deploy/test.sh builds), and starts the daemon on http://127.0.0.1:8080 serving the GPUs it finds, else mock devices. Extra
# arguments go to `kernelscan serve`, e.g.
#   deploy/run.sh --mock-devices 2 --mock-model H100
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_missing "${KERNELSCAN_PACKAGES[@]}"
install_web_packages
build_kernelscan auto kernelscan
cd "$KERNELSCAN_ROOT"
exec "$KERNELSCAN_ROOT/build/server/kernelscan" serve "$@"

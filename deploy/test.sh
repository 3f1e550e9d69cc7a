#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the fuzzers for a bounded time, then
# unit, integration (real daemons on free loopback ports), the Python client's tests and the
# source format check.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_missing "${KERNELSCAN_PACKAGES[@]}" "${KERNELSCAN_TEST_PACKAGES[@]}"
install_web_packages dev
build_kernelscan
bash "$KERNELSCAN_ROOT/deploy/fuzz.sh"
cd "$KERNELSCAN_ROOT"
ctest --preset default -j "$(nproc)" --timeout 300

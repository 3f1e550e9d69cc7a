#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test: the fuzzers for a bounded time, then
# unit, integration (real daemons on free loopback ports), the device suite on the OpenCL engine
# (PoCL), the Python client's tests, the browser test and the source format check; then it builds
# the GPU engine for AMD (hipcc) and NVIDIA (nvcc) and runs the GPU tests, which skip themselves
# on a machine without a GPU.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_missing "${KERNELSCAN_PACKAGES[@]}" "${KERNELSCAN_TEST_PACKAGES[@]}" \
  "${KERNELSCAN_HIP_PACKAGES[@]}"
install_web_packages dev
# The full suite runs on the mock engine and on the OpenCL engine (PoCL on this machine's CPU),
# whose half of the device suite must run here, not skip; the GPU builds below add the GPU tests,
# which run on a GPU where there is one.
export KERNELSCAN_REQUIRE_OPENCL=1
use_ccache
build_kernelscan off
bash "$KERNELSCAN_ROOT/deploy/fuzz.sh"
cd "$KERNELSCAN_ROOT"
ctest --preset default -j "$(nproc)" --timeout 300
build_and_test_gpu hip
if nvcc_available; then
  build_and_test_gpu cuda
else
  echo "kernelscan: WARNING: no nvcc (CUDA toolkit) on this machine: the NVIDIA build is not checked"
fi

# Shared by deploy/run.sh and deploy/test.sh (sourced, not run): installs the Debian 12
# packages kernelscan needs when they are missing, and builds it with the default preset.

set -euo pipefail

KERNELSCAN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Build and runtime dependencies (README, "Dependencies").
# The OpenCL engine: the ICD loader and headers, CLBlast, and PoCL, which runs OpenCL kernels on
# the CPU, so that every machine has a real device.
KERNELSCAN_PACKAGES=(
  cmake ninja-build g++ pkg-config
  libcpp-httplib-dev nlohmann-json3-dev libsqlite3-dev libspdlog-dev libasio-dev
  libcli11-dev libmuparser-dev libpq-dev libssl-dev zlib1g-dev
  ocl-icd-opencl-dev opencl-c-headers libclblast-dev pocl-opencl-icd
)
# What the tests add: GoogleTest, the format check, clang with libFuzzer for the fuzzers, wrk
# for the benchmarks, Chromium for the dashboard's browser test, Python 3 for the Python
# client's tests, curl and jq for the README's examples (run as a test), a PostgreSQL server,
# which the tests start themselves (as the postgres user the package creates) in temporary
# directories, and ccache (use_ccache).
KERNELSCAN_TEST_PACKAGES=(libgtest-dev libgmock-dev clang-format clang libclang-rt-14-dev wrk chromium
  python3 python3-yaml curl jq postgresql ccache)
# The AMD toolchain, so that the tests also compile the GPU engine for AMD (Debian's hipcc targets
# gfx90a); nvcc for the NVIDIA build comes with the CUDA toolkit, which Debian does not carry.
KERNELSCAN_HIP_PACKAGES=(hipcc libamdhip64-dev)

install_missing() {
  local missing=()
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    return 0
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
  fi
  echo "kernelscan: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
}

# The dashboard's npm packages (web/package.json, pinned by web/package-lock.json): ECharts, which
# the build embeds, and with "dev" playwright-core, which drives Chromium in the browser test.
# Node.js and npm come from Debian when the machine has none.
install_web_packages() {
  if ! command -v npm >/dev/null 2>&1; then
    install_missing nodejs npm
  fi
  local lock="$KERNELSCAN_ROOT/web/package-lock.json"
  local stamp="$KERNELSCAN_ROOT/web/node_modules/.kernelscan-installed"
  local want="$(sha256sum "$lock" | cut -d' ' -f1) ${1:-runtime}"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0
  fi
  echo "kernelscan: installing the dashboard's npm packages"
  local omit=(--omit=dev)
  if [ "${1:-}" = "dev" ]; then
    omit=()
  fi
  (cd "$KERNELSCAN_ROOT/web" && npm ci --no-audit --no-fund --loglevel=error "${omit[@]}")
  echo "$want" >"$stamp"
}

# Compiles through ccache where it is installed, for build trees configured from here on: the
# GPU builds compile most of the daemon and its tests exactly as the default build did (the same
# flags, a build folder at the same depth), and take those objects from the cache.
use_ccache() {
  command -v ccache >/dev/null 2>&1 || return 0
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  # Paths under the repository hashed as relative ones, and not the build folder, so that
  # build/, build-hip/ and build-cuda/ share entries.
  export CCACHE_BASEDIR="$KERNELSCAN_ROOT" CCACHE_NOHASHDIR=1
}

# The default preset, with the GPU engine given as $1 (off, hip, cuda or auto: the toolchain of
# this machine's GPU, else the one installed); KERNELSCAN_GPU in the environment overrides it.
# Further arguments name the targets to build (default: everything, the tests included), e.g.
# `build_kernelscan auto kernelscan` for the daemon alone.
build_kernelscan() {
  cd "$KERNELSCAN_ROOT"
  cmake --preset default -DKERNELSCAN_GPU="${KERNELSCAN_GPU:-${1:-auto}}" >/dev/null
  local targets=()
  if (($# > 1)); then
    targets=(--target "${@:2}")
  fi
  cmake --build --preset default -j "$(nproc)" "${targets[@]}"
}

# Builds the daemon and the GPU tests in a GPU configuration (hip or cuda) and runs the tests
# labelled gpu, which skip themselves where there is no GPU but check that the GPU build starts
# and serves mock devices, and those labelled gpu_build (the -L regex matches both): run-time
# compilation against this machine's headers and the AMD clock's compile check, which need no GPU.
build_and_test_gpu() {
  local gpu="$1"
  cd "$KERNELSCAN_ROOT"
  echo "kernelscan: building the GPU engine for $gpu"
  cmake --preset "$gpu" >/dev/null
  cmake --build --preset "$gpu" -j "$(nproc)" --target kernelscan device_tests rtc_compile_tests \
    gpu_backend_tests
  ctest --preset "$gpu" -L gpu --timeout 600
}

nvcc_available() {
  command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]
}

#!/usr/bin/env bash
# Packs a GPU build for a machine that has a GPU and its driver but not Debian's packages nor this
# build's CUDA version (a machine with only a driver, a CUDA toolkit, PyTorch and Triton): the
# stripped daemon and GPU tests; beside them in lib/ the shared libraries they need beyond glibc
# and the driver, cuBLAS, cuBLASLt and NVRTC (with its builtins) of the toolkit they were built
# with included; in include/ that toolkit's device headers, which the bundled NVRTC compiles user
# kernels with (engine/hip/rtc_headers.hpp looks beside the loaded libnvrtc first); and run.sh,
# which runs the GPU tests and the GPU benchmark there.
#   deploy/gpu-bundle.sh build-cuda .gpu     # here
#   bash .gpu/run.sh                         # there, from the repository root
# The executables find lib/ by their RPATH ($ORIGIN/lib), so no LD_LIBRARY_PATH is set: Python
# (PyTorch, Triton, the benchmark) keeps loading its own CUDA libraries.
set -euo pipefail
build="${1:-build-cuda}"
out="${2:-.gpu}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v patchelf >/dev/null 2>&1; then
  source "$root/deploy/common.sh"
  install_missing patchelf
fi
exes=()
for exe in server/kernelscan tests/gpu_tests tests/rtc_compile_tests; do
  if [ -f "$build/$exe" ]; then exes+=("$exe"); fi
done
rm -rf "$out"
mkdir -p "$out/lib"
for exe in "${exes[@]}"; do
  strip -o "$out/$(basename "$exe")" "$build/$exe"
  # DT_RPATH (not RUNPATH): it also serves what libraries load later, such as the builtins NVRTC
  # opens when it first compiles.
  patchelf --force-rpath --set-rpath '$ORIGIN/lib' "$out/$(basename "$exe")"
done
# Every library the executables load, except glibc's own and the driver's (the machine's).
ldd "${exes[@]/#/$build/}" | awk '/=> \// {print $3}' | sort -u |
  while read -r lib; do
    case "$(basename "$lib")" in
      libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) ;;
      libcuda.so* | libnvidia-*) ;;
      *) cp -L "$lib" "$out/lib/" ;;
    esac
  done
# NVRTC opens its builtins itself (not through ldd's list); cuBLAS loads cuBLASLt, already there.
nvrtc="$(ldd "$build/server/kernelscan" | awk '/libnvrtc\.so/ {print $3}')"
if [ -n "$nvrtc" ]; then
  cp -L "$(dirname "$nvrtc")"/libnvrtc-builtins.so.* "$out/lib/"
  # The toolkit's device headers, as rtc_headers.hpp finds them beside lib/ (libcu++ in cccl/).
  cuda_include="$(cd "$(dirname "$nvrtc")/../include" && pwd -P)"
  mkdir -p "$out/include/cccl"
  cp -rL "$cuda_include"/*.h "$cuda_include"/*.hpp "$cuda_include"/crt \
    "$cuda_include"/cooperative_groups "$out/include/"
  cp -rL "$cuda_include"/cccl/cuda "$cuda_include"/cccl/nv "$out/include/cccl/"
  # Host-only parts of the toolkit and other libraries' headers are not for kernels.
  rm -f "$out"/include/{cudnn,cupti,cufft,cusparse,cusolver,npp,nvjpeg,nvml}*.h
fi
cp "$root/tests/bench/bench_gpu.py" "$out/"
cat >"$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# On the GPU machine: run-time compilation with the bundled NVRTC, the GPU tests, then the GPU
# benchmark. Output goes to stdout. The executables load the bundle's lib/ by their RPATH; the
# environment is left as it is, for Python's sake.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export KERNELSCAN_TEST_BINARY="$here/kernelscan"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv 2>/dev/null || true
"$here/kernelscan" worker --probe || echo "probe exited $?"
if [ -x "$here/rtc_compile_tests" ]; then
  "$here/rtc_compile_tests" --gtest_color=no
  echo "rtc_compile_tests exit: $?"
fi
filter=()
if [ -n "${GPU_TEST_FILTER:-}" ]; then filter=(--gtest_filter="$GPU_TEST_FILTER"); fi
"$here/gpu_tests" --gtest_color=no "${filter[@]}"
echo "gpu_tests exit: $?"
if [ -z "${SKIP_BENCH:-}" ]; then
  python3 "$here/bench_gpu.py" --binary "$here/kernelscan"
  echo "bench_gpu exit: $?"
fi
RUN
chmod +x "$out/run.sh"
# What the bundle loads from where, checked here: every library of the executables resolves
# inside it or to glibc and the driver.
for exe in "${exes[@]}"; do
  outside="$(ldd "$out/$(basename "$exe")" | awk '/=> \// {print $3}' |
    grep -v -e "^$(cd "$out" && pwd)/lib/" -e '/libc\.so' -e '/libm\.so' -e '/libpthread\.so' \
      -e '/libdl\.so' -e '/librt\.so' -e 'ld-linux' -e '/libcuda\.so' || true)"
  if [ -n "$outside" ]; then
    echo "kernelscan: $(basename "$exe") would load from outside the bundle:" >&2
    echo "$outside" >&2
    exit 1
  fi
done
du -sh "$out"
ls -la "$out/lib"

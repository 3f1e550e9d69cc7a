#!/usr/bin/env bash
# Packs a GPU build for a machine that has a GPU and its driver but not Debian's packages (the
# lent GPU machines): the stripped daemon and GPU tests, the shared libraries they need beyond
# glibc and the GPU runtime, and run.sh, which runs the GPU tests and the GPU benchmark there.
#   deploy/gpu-bundle.sh build-cuda .gpu     # here
#   bash .gpu/run.sh                         # there, from the repository root
set -euo pipefail
build="${1:-build-cuda}"
out="${2:-.gpu}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rm -rf "$out"
mkdir -p "$out/lib"
for exe in server/kernelscan tests/gpu_tests; do
  strip -o "$out/$(basename "$exe")" "$build/$exe"
done
# Libraries from the system's library folders, except glibc's own and the GPU runtime's.
ldd "$build/server/kernelscan" "$build/tests/gpu_tests" | awk '/=> \// {print $3}' | sort -u |
  while read -r lib; do
    case "$(basename "$lib")" in
      libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) ;;
      libcuda* | libcublas* | libnvrtc* | libamdhip64* | libhiprtc* | libhipblas* | librocblas*) ;;
      *) cp -L "$lib" "$out/lib/" ;;
    esac
  done
cp "$root/tests/bench/bench_gpu.py" "$out/"
cat >"$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# On the GPU machine: the GPU tests, then the GPU benchmark. Output goes to stdout.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# cuBLAS and NVRTC from the CUDA toolkit, else from the Python wheels PyTorch brought.
cuda_libs=""
for lib in libcublas.so.13 libcublasLt.so.13 libnvrtc.so.13; do
  dir="$(find -H /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib /opt /usr/lib \
    -name "$lib" -printf '%h\n' 2>/dev/null | head -1)"
  [ -n "$dir" ] && cuda_libs="$cuda_libs$dir:"
done
export LD_LIBRARY_PATH="$here/lib:${cuda_libs}${LD_LIBRARY_PATH:-}"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
export KERNELSCAN_TEST_BINARY="$here/kernelscan"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv 2>/dev/null || true
"$here/kernelscan" worker --probe || echo "probe exited $?"
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
du -sh "$out"

#!/usr/bin/env bash
# Packs a GPU build for a machine that has a GPU and its driver but not Debian's packages (a
# machine with only a driver, a CUDA toolkit, PyTorch and Triton): the stripped daemon, the
# device, backend and run-time-compilation tests and the defences benchmark; beside them in lib/
# the shared libraries they need beyond glibc and the driver; and run.sh, which runs the tests
# and the benchmarks there.
#   deploy/gpu-bundle.sh build-cuda .gpu          # here (slim: for a machine with the toolkit)
#   deploy/gpu-bundle.sh build-cuda .gpu --full   # also cuBLAS, cuBLASLt, NVRTC and headers
#   bash .gpu/run.sh                              # there, from the repository root
#   OUT=/some/folder bash .gpu/run.sh             # each step's log in that folder
# The executables find lib/ by their RPATH ($ORIGIN/lib), so no LD_LIBRARY_PATH is set: Python
# (PyTorch, Triton, the benchmark) keeps loading its own CUDA libraries.
#
# cuBLAS, cuBLASLt and NVRTC are most of a full bundle (over 700 MB for CUDA 13, cuBLASLt alone
# 540 MB), more than a lent GPU machine takes along (64 MiB). A slim bundle leaves them out:
# run.sh finds the same major version on that machine (its CUDA toolkit, or the nvidia-* Python
# wheels PyTorch brings) and links them into lib/, where the RPATH finds them; NVRTC then takes
# its headers from that toolkit (engine/hip/rtc_headers.hpp).
set -euo pipefail
build="${1:-build-cuda}"
out="${2:-.gpu}"
full=0
if [ "${3:-}" = "--full" ]; then full=1; fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v patchelf >/dev/null 2>&1; then
  source "$root/deploy/common.sh"
  install_missing patchelf
fi
exes=()
for exe in server/kernelscan tests/device_tests tests/rtc_compile_tests tests/gpu_backend_tests \
  tests/bench/bench_defences; do
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
# The CUDA libraries a slim bundle takes from the machine it runs on.
toolkit_lib() {
  case "$1" in
    libcublas.so.* | libcublasLt.so.* | libnvrtc.so.* | libnvrtc-builtins.so.*) return 0 ;;
  esac
  return 1
}
# Every library the executables load, except glibc's own and the driver's (the machine's).
ldd "${exes[@]/#/$build/}" | awk '/=> \// {print $3}' | sort -u |
  while read -r lib; do
    name="$(basename "$lib")"
    case "$name" in
      libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*) continue ;;
      libcuda.so* | libnvidia-*) continue ;;
    esac
    if [ "$full" = 0 ] && toolkit_lib "$name"; then
      echo "$name" >>"$out/lib/from-the-machine.txt"
      continue
    fi
    cp -L "$lib" "$out/lib/"
  done
nvrtc="$(ldd "$build/server/kernelscan" | awk '/libnvrtc\.so/ {print $3}')"
if [ "$full" = 1 ] && [ -n "$nvrtc" ]; then
  # NVRTC opens its builtins itself (not through ldd's list); cuBLAS loads cuBLASLt, already there.
  cp -L "$(dirname "$nvrtc")"/libnvrtc-builtins.so.* "$out/lib/"
  # The toolkit's device headers, as rtc_headers.hpp finds them beside lib/ (libcu++ in cccl/).
  cuda_include="$(cd "$(dirname "$nvrtc")/../include" && pwd -P)"
  mkdir -p "$out/include/cccl"
  cp -rL "$cuda_include"/*.h "$cuda_include"/*.hpp "$cuda_include"/crt \
    "$cuda_include"/cooperative_groups "$out/include/"
  cp -rL "$cuda_include"/cccl/cuda "$cuda_include"/cccl/nv "$out/include/cccl/"
  # Host-only parts of the toolkit and other libraries' headers are not for kernels.
  rm -f "$out"/include/{cudnn,cupti,cufft,cusparse,cusolver,npp,nvjpeg,nvml}*.h
elif [ -n "$nvrtc" ]; then
  (cd "$(dirname "$nvrtc")" && ls libnvrtc-builtins.so.* | head -n 1) >>"$out/lib/from-the-machine.txt"
fi
cp "$root/tests/bench/bench_gpu.py" "$out/"
cat >"$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# On the GPU machine: run-time compilation with NVRTC, the backend and device tests, then the GPU
# benchmark and what the defences cost. The executables load the bundle's lib/ by their RPATH;
# the environment is left as it is, for Python's sake. Each step has a time limit (seconds:
# TEST_LIMIT for the device suite, BENCH_LIMIT for each benchmark), so one that hangs leaves
# time for the rest. Output goes to stdout; with OUT set (a folder), each step's whole output goes
# to OUT/<step>.log instead, with its test results and last lines on stdout. SKIP_BENCH=1 runs
# the tests alone; GPU_TEST_FILTER picks device suite cases; STEPS="bench_defences ..." runs only
# the steps named.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# A slim bundle: link the CUDA libraries it left out (lib/from-the-machine.txt) into lib/ from
# this machine's toolkit or PyTorch's nvidia-* wheels.
if [ -f "$here/lib/from-the-machine.txt" ]; then
  dirs=()
  for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    [ -n "$d" ] && [ -d "$d" ] && dirs+=("$d/lib64" "$d/lib" "$d/targets/x86_64-linux/lib")
  done
  wheels="$(python3 -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null || true)"
  [ -n "$wheels" ] && dirs+=("$wheels/nvidia")
  while read -r name; do
    [ -n "$name" ] || continue
    found=""
    for d in "${dirs[@]}"; do
      [ -d "$d" ] || continue
      found="$(find -L "$d" -maxdepth 4 -name "$name" -print -quit 2>/dev/null || true)"
      [ -n "$found" ] && break
    done
    if [ -z "$found" ]; then
      echo "run.sh: $name not found in ${dirs[*]}" >&2
      continue
    fi
    ln -sf "$found" "$here/lib/$name"
    # NVRTC's builtins live beside it, whatever their version suffix.
    for b in "$(dirname "$found")"/libnvrtc-builtins.so*; do
      [ -e "$b" ] && ln -sf "$b" "$here/lib/$(basename "$b")"
    done
  done <"$here/lib/from-the-machine.txt"
fi
export KERNELSCAN_TEST_BINARY="$here/kernelscan"
[ -n "${OUT:-}" ] && mkdir -p "$OUT"
# step NAME LIMIT COMMAND...: runs it under `timeout`, and says how it ended and after how long.
# With STEPS set (names, space-separated), only those steps run.
step() {
  local name="$1" limit="$2" start=$SECONDS rc
  shift 2
  if [ -n "${STEPS:-}" ] && [[ " $STEPS " != *" $name "* ]]; then return 0; fi
  if [ -n "${OUT:-}" ]; then
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    grep -E '^\[ *(FAILED|PASSED|SKIPPED) *\]|Failure|^bench|^device:|fixed cost:|scrub:' "$OUT/$name.log" |
      cut -c1-300 | tail -30
    case "$name" in bench*) tail -n 30 "$OUT/$name.log" | cut -c1-300 ;; esac
  else
    timeout "$limit" "$@"
    rc=$?
  fi
  echo "$name exit: $rc after $((SECONDS - start)) s"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv 2>/dev/null || true
"$here/kernelscan" worker --probe || echo "probe exited $?"
if [ -x "$here/rtc_compile_tests" ]; then
  step rtc_compile_tests 120 "$here/rtc_compile_tests" --gtest_color=no
fi
if [ -x "$here/gpu_backend_tests" ]; then
  step gpu_backend_tests 120 env KERNELSCAN_REQUIRE_GPU=1 "$here/gpu_backend_tests" --gtest_color=no
fi
# What the defences cost comes before the long device suite: a short lease still measures it.
if [ -z "${SKIP_BENCH:-}" ] && [ -x "$here/bench_defences" ]; then
  step bench_defences "${BENCH_LIMIT:-180}" "$here/bench_defences" "${DEFENCES_ROUNDS:-7}" hip
fi
step device_tests "${TEST_LIMIT:-300}" "$here/device_tests" --gtest_color=no \
  --gtest_filter="${GPU_TEST_FILTER:-*/hip:GpuAbsent.*}"
if [ -z "${SKIP_BENCH:-}" ]; then
  step bench_gpu "${BENCH_LIMIT:-180}" python3 -u "$here/bench_gpu.py" --binary "$here/kernelscan"
fi
# The OpenCL engine on the GPU, last: the device suite's OpenCL half through the driver's own
# OpenCL library (OPENCL_ICD_LIB, else libnvidia-opencl found on the machine), which the bundle's
# ICD loader reads from a vendors folder made here, since the machine may have no
# /etc/OpenCL/vendors. The cheats that count launches in program-scope globals ask for
# `-cl-std=CL2.0`: where the driver refuses it they fail with a compile_error saying so.
if [ -z "${SKIP_OPENCL:-}" ]; then
  icd_lib="${OPENCL_ICD_LIB:-}"
  if [ -z "$icd_lib" ]; then
    icd_lib="$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}')"
  fi
  if [ -z "$icd_lib" ]; then
    icd_lib="$(find /usr/lib /usr/lib64 /usr/local/nvidia /usr/local/cuda/compat \
      -name 'libnvidia-opencl.so.1' -print -quit 2>/dev/null || true)"
  fi
  if [ -n "$icd_lib" ]; then
    vendors="$(mktemp -d)"
    echo "$icd_lib" >"$vendors/gpu.icd"
    step opencl_device_tests "${OPENCL_LIMIT:-150}" env OCL_ICD_VENDORS="$vendors" \
      KERNELSCAN_REQUIRE_OPENCL=1 "$here/device_tests" --gtest_color=no \
      --gtest_filter="${OPENCL_TEST_FILTER:-*/opencl}"
  else
    echo "opencl_device_tests: no OpenCL library of the GPU's driver (libnvidia-opencl.so.1)"
  fi
fi
RUN
chmod +x "$out/run.sh"
# What the bundle loads from where, checked here: every library of the executables resolves
# inside it, to glibc and the driver, or (slim) to the toolkit libraries run.sh links there.
for exe in "${exes[@]}"; do
  outside="$(ldd "$out/$(basename "$exe")" | awk '/=> \// {print $3}' |
    grep -v -e "^$(cd "$out" && pwd)/lib/" -e '/libc\.so' -e '/libm\.so' -e '/libpthread\.so' \
      -e '/libdl\.so' -e '/librt\.so' -e 'ld-linux' -e '/libcuda\.so' \
      -e '/libcublas' -e '/libnvrtc' || true)"
  if [ -n "$outside" ]; then
    echo "kernelscan: $(basename "$exe") would load from outside the bundle:" >&2
    echo "$outside" >&2
    exit 1
  fi
done
du -sh "$out"
ls -la "$out/lib"

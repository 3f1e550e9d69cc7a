#pragma once
// Where the run-time compiler finds the headers a user kernel may include (source_policy.hpp),
// decided on the machine that compiles the kernel, not the one that built kernelscan. Plain C++
// (no GPU runtime), so that it is tested everywhere; rtc.hip passes in the paths of the loaded
// compiler and runtime libraries (loaded_library()).
//
// NVRTC searches no folder by itself. CUDA's headers are taken from the first CUDA install
// found, in this order:
//   beside the loaded libnvrtc, whose version the headers must match: ../include, or
//     ../../include for a lib/<multiarch> folder; for a Python wheel
//     (site-packages/nvidia/<part>/lib/libnvrtc.so.N) every nvidia/*/include folder of the wheels
//     installed beside it (CUDA 12 splits them by part, CUDA 13 has nvidia/cu13);
//   $CUDA_HOME, then $CUDA_PATH (their include/ folders), for an NVRTC that has no headers beside
//     it;
//   /usr/local/cuda/include;
//   the toolkit kernelscan was built with.
// An install counts when one of its folders has cuda_fp16.h; its libcu++ folder (include/cccl in
// CUDA 13, which holds cuda/std/...) comes with it. Headers of two installs are never mixed.
//
// hipRTC's own prelude already holds hip_runtime.h and hip_fp16.h (newer hipRTCs also
// hip_bfloat16.h); the other HIP headers come from the first ROCm include folder that has
// hip/hip_runtime.h: beside the loaded libhiprtc or libamdhip64 (../include, ../../include),
// $ROCM_PATH, $HIP_PATH, /opt/rocm, /usr. A system folder (/usr/include, /usr/local/include) is
// not handed over: the compiler searches it already, and naming it again would put it before the
// compiler's own headers.
//
// Pure functions of their inputs and the file system; thread-safe.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kernelscan::gpu {

// What the search looks at besides the file system.
struct header_search {
  // The environment; the process's by default.
  std::function<std::optional<std::string>(std::string_view)> env;
  // Files of the loaded compiler and runtime libraries (loaded_library()).
  std::vector<std::string> libraries;
  // Installs tried after the environment and the libraries, in order (their include folders).
  std::vector<std::string> defaults;
  // Folders the compiler searches without being told (never handed over).
  std::vector<std::string> system_dirs{"/usr/include", "/usr/local/include"};
};

// The folders to hand the compiler, and where they came from ("$CUDA_HOME", "beside
// /usr/local/cuda/lib64/libnvrtc.so.13", ...) for logs and compile errors. `dirs` is empty when
// no install was found (or the one found is a system folder: `from` still says which).
struct header_dirs {
  std::vector<std::string> dirs;
  std::string from;
};

// Defaults: /usr/local/cuda/include, then `build_include_dir` when not empty.
header_search cuda_header_search(std::vector<std::string> libraries,
                                 const std::string& build_include_dir);
// Defaults: /opt/rocm/include, /usr/include.
header_search rocm_header_search(std::vector<std::string> libraries);

header_dirs find_cuda_headers(const header_search& search);
header_dirs find_rocm_headers(const header_search& search);

// The file of the first shared library loaded in this process whose file name starts with
// `prefix` ("libnvrtc.so"), as the dynamic loader opened it; "" when none is.
std::string loaded_library(std::string_view prefix);

}  // namespace kernelscan::gpu

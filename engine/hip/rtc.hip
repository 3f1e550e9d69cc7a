#include "engine/hip/rtc.hpp"

#include <memory>
#include <utility>
#include <vector>

#include "engine/hip/log.hpp"
#include "engine/hip/rtc_headers.hpp"
#include "engine/source_policy.hpp"

namespace kernelscan::gpu {
namespace {

// More distinct kernels than a job of many variants needs; past it the cache starts over.
constexpr std::size_t k_max_modules = 256;

// A header handed to the compiler by name, ahead of any include folder.
struct program_header {
  std::string name;
  std::string text;
};

#if defined(KERNELSCAN_GPU_CUDA)
// HIP sources on NVIDIA see this header in place of each HIP header a kernel may include
// (source_policy.hpp): the CUDA built-ins under the HIP names kernels commonly use. One text under
// many names, so guarded by a macro rather than #pragma once.
constexpr const char* k_hip_runtime_shim = R"(#ifndef KERNELSCAN_HIP_ON_CUDA
#define KERNELSCAN_HIP_ON_CUDA
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef __nv_bfloat16 hip_bfloat16;
#define hipThreadIdx_x threadIdx.x
#define hipThreadIdx_y threadIdx.y
#define hipThreadIdx_z threadIdx.z
#define hipBlockIdx_x blockIdx.x
#define hipBlockIdx_y blockIdx.y
#define hipBlockIdx_z blockIdx.z
#define hipBlockDim_x blockDim.x
#define hipBlockDim_y blockDim.y
#define hipBlockDim_z blockDim.z
#define hipGridDim_x gridDim.x
#define hipGridDim_y gridDim.y
#define hipGridDim_z gridDim.z
#define HIP_DYNAMIC_SHARED(type, var) extern __shared__ type var[];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
// HIP's warp functions take no mask; since Volta CUDA has only the _sync forms, which do. The
// whole-warp mask is HIP's meaning: every lane of the warp takes part. (Below sm_70 CUDA still
// has the maskless forms itself.)
template <typename T>
__device__ inline T __shfl(T var, int src_lane, int width = warpSize) {
  return __shfl_sync(0xffffffffu, var, src_lane, width);
}
template <typename T>
__device__ inline T __shfl_up(T var, unsigned int delta, int width = warpSize) {
  return __shfl_up_sync(0xffffffffu, var, delta, width);
}
template <typename T>
__device__ inline T __shfl_down(T var, unsigned int delta, int width = warpSize) {
  return __shfl_down_sync(0xffffffffu, var, delta, width);
}
template <typename T>
__device__ inline T __shfl_xor(T var, int lane_mask, int width = warpSize) {
  return __shfl_xor_sync(0xffffffffu, var, lane_mask, width);
}
// The votes keep CUDA's declarations (deprecated, invalid from sm_70), so they are renamed here.
// HIP's ballot is 64 bits wide (AMD's wavefronts have up to 64 lanes).
#define __any(predicate) __any_sync(0xffffffffu, (predicate))
#define __all(predicate) __all_sync(0xffffffffu, (predicate))
#define __ballot(predicate) ((unsigned long long)__ballot_sync(0xffffffffu, (predicate)))
#endif
#endif
)";

std::vector<program_header> program_headers(kernel_language language) {
  std::vector<program_header> out;
  // CUDA sources include CUDA's own headers, from the include folders.
  if (language == kernel_language::cuda) return out;
  for (auto h : allowed_kernel_includes(kernel_language::hip))
    out.push_back({std::string(h), k_hip_runtime_shim});
  return out;
}

header_dirs find_headers() {
#ifdef KERNELSCAN_CUDA_INCLUDE_DIR
  const std::string built_with = KERNELSCAN_CUDA_INCLUDE_DIR;
#else
  const std::string built_with;
#endif
  return find_cuda_headers(cuda_header_search({loaded_library("libnvrtc.so")}, built_with));
}
#else
// hipRTC compiles every kernel with a prelude of HIP's device headers built in (hip_runtime.h
// and hip_fp16.h; newer hipRTCs also hip_bfloat16.h). Including the installed copy of one of
// them again redefines what the prelude holds (hipRTC of ROCm 5), so the kernel sees these
// stand-ins instead; the other HIP headers come from the ROCm include folder.
constexpr const char* k_in_prelude = "#pragma once\n// built into hipRTC's prelude\n";
constexpr const char* k_bfloat16_stand_in = R"(#pragma once
#ifndef _HIP_BFLOAT16_H_
#error "hip/hip_bfloat16.h: this hipRTC does not build hip_bfloat16 into run-time compiled kernels"
#endif
)";

std::vector<program_header> program_headers(kernel_language) {
  return {{"hip/hip_runtime.h", k_in_prelude},
          {"hip/hip_runtime_api.h", k_in_prelude},
          {"hip/hip_fp16.h", k_in_prelude},
          {"hip/hip_vector_types.h", k_in_prelude},
          {"hip/hip_bfloat16.h", k_bfloat16_stand_in}};
}

header_dirs find_headers() {
  return find_rocm_headers(
      rocm_header_search({loaded_library("libhiprtc.so"), loaded_library("libamdhip64.so")}));
}
#endif

// The include folders of this machine, found once per process.
const header_dirs& machine_headers() {
  static const header_dirs found = [] {
    header_dirs d = find_headers();
    return d;
  }();
  return found;
}

struct program_owner {
  hiprtcProgram program{};
  ~program_owner() {
    if (program) (void)hiprtcDestroyProgram(&program);
  }
};

std::string program_log(hiprtcProgram p) {
  std::size_t size = 0;
  if (hiprtcGetProgramLogSize(p, &size) != HIPRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (hiprtcGetProgramLog(p, log.data()) != HIPRTC_SUCCESS) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  return log;
}

void rtc_check(hiprtcResult r, const char* what) {
  if (r != HIPRTC_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": " + hiprtcGetErrorString(r));
  }
}

}  // namespace

const std::string& rtc_header_note() {
  static const std::string note = [] {
    const header_dirs& h = machine_headers();
#if defined(KERNELSCAN_GPU_CUDA)
    const std::string what = "CUDA headers";
    const std::string fix = "set CUDA_HOME to a CUDA toolkit";
#else
    const std::string what = "ROCm headers";
    const std::string fix = "set ROCM_PATH to a ROCm install";
#endif
    if (h.from.empty()) return what + ": none found (" + fix + ")";
    std::string dirs;
    for (const auto& d : h.dirs)
      dirs += (dirs.empty() ? "" : ", ") + d;
    return what + " from " + h.from + (dirs.empty() ? "" : ": " + dirs);
  }();
  return note;
}

compiled_kernel compile_kernel(const custom_kernel& kernel, const std::string& arch) {
#if !defined(KERNELSCAN_GPU_CUDA)
  if (kernel.language == kernel_language::cuda) {
    throw unsupported_language_error(
        "language \"cuda\" (CUDA C++, compiled by NVRTC) runs on NVIDIA GPUs only; this is an "
        "AMD GPU (" +
        arch +
        "). Submit it to an NVIDIA device, or write the kernel in \"hip\", which runs on AMD and "
        "NVIDIA GPUs");
  }
#endif
  static const bool logged = [] {
    log_info("run-time compilation: " + rtc_header_note());
    return true;
  }();
  (void)logged;

  const std::vector<program_header> headers = program_headers(kernel.language);
  std::vector<const char*> header_names, header_texts;
  for (const auto& h : headers) {
    header_names.push_back(h.name.c_str());
    header_texts.push_back(h.text.c_str());
  }
  program_owner prog;
  const char* file = kernel.language == kernel_language::cuda ? "kernel.cu" : "kernel.hip";
  rtc_check(hiprtcCreateProgram(&prog.program, kernel.source.c_str(), file,
                                int(header_texts.size()), header_texts.data(), header_names.data()),
            "creating the program");
  rtc_check(hiprtcAddNameExpression(prog.program, kernel.entry.c_str()), "naming the entry");

  std::vector<std::string> options;
#if defined(KERNELSCAN_GPU_CUDA)
  options.push_back("-arch=" + arch);
  options.push_back("-default-device");
#else
  options.push_back("--offload-arch=" + arch);
#endif
  options.push_back("-std=c++17");
  for (const auto& dir : machine_headers().dirs)
    options.push_back("-I" + dir);
  for (const auto& o : kernel.compile_options)
    options.push_back(o);
  std::vector<const char*> argv;
  for (const auto& o : options)
    argv.push_back(o.c_str());

  const hiprtcResult compiled = hiprtcCompileProgram(prog.program, int(argv.size()), argv.data());
  if (compiled != HIPRTC_SUCCESS) {
    const std::string log = bounded_compile_log(program_log(prog.program));
    // A header the kernel may include was not found: say where the compiler looked.
    const bool missing = log.find("cannot open source file") != std::string::npos ||
                         log.find("file not found") != std::string::npos;
    throw compile_error(
        "the kernel did not compile (" + std::string(hiprtcGetErrorString(compiled)) + ")" +
        (log.empty() ? "" : ":\n" + log) + (missing ? "\n(" + rtc_header_note() + ")" : ""));
  }
  const char* lowered = nullptr;
  if (hiprtcGetLoweredName(prog.program, kernel.entry.c_str(), &lowered) != HIPRTC_SUCCESS ||
      !lowered) {
    throw compile_error("entry \"" + kernel.entry +
                        "\" is not a __global__ function of the source");
  }
  compiled_kernel out;
  out.symbol = lowered;
  std::size_t size = 0;
  rtc_check(hiprtcGetCodeSize(prog.program, &size), "reading the code size");
  out.code.resize(size);
  rtc_check(hiprtcGetCode(prog.program, out.code.data()), "reading the code");
  return out;
}

module_cache::module_cache(std::string arch) : m_arch(std::move(arch)) {}

module_cache::~module_cache() {
  release_fresh();
  for (auto& [key, m] : m_modules)
    (void)hipModuleUnload(m.module);
}

void module_cache::release_fresh() {
  for (hipModule_t m : m_fresh)
    (void)hipModuleUnload(m);
  m_fresh.clear();
}

void module_cache::trim() {
  if (m_modules.size() < k_max_modules) return;
  for (auto& [key, m] : m_modules)
    (void)hipModuleUnload(m.module);
  m_modules.clear();
}

hipFunction_t module_cache::function(const custom_kernel& kernel) {
  return find(kernel).function;
}

hipFunction_t module_cache::fresh_function(const custom_kernel& kernel) {
  const loaded& cached = find(kernel);
  hipModule_t module{};
  check(hipModuleLoadData(&module, cached.compiled.code.data()), "loading the module afresh");
  m_fresh.push_back(module);
  hipFunction_t fn{};
  check(hipModuleGetFunction(&fn, module, cached.compiled.symbol.c_str()),
        "finding the entry in the module loaded afresh");
  return fn;
}

const module_cache::loaded& module_cache::find(const custom_kernel& kernel) {
  std::string key = m_arch + '\0' + compile_key(kernel);
  if (auto it = m_modules.find(key); it != m_modules.end()) return it->second;

  loaded m;
  m.compiled = compile_kernel(kernel, m_arch);
  check(hipModuleLoadData(&m.module, m.compiled.code.data()), "loading the compiled module");
  const hipError_t found = hipModuleGetFunction(&m.function, m.module, m.compiled.symbol.c_str());
  if (found != hipSuccess) {
    (void)hipModuleUnload(m.module);
    throw compile_error("entry \"" + kernel.entry + "\" was not found in the compiled module (" +
                        hipGetErrorString(found) + ")");
  }
  return m_modules.emplace(std::move(key), std::move(m)).first->second;
}

}  // namespace kernelscan::gpu

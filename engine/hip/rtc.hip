#include "engine/hip/rtc.hpp"

#include <memory>
#include <vector>

#include "engine/source_policy.hpp"

namespace kernelscan::gpu {
namespace {

// More distinct kernels than a job of many variants needs; past it the cache starts over.
constexpr std::size_t k_max_modules = 256;

#if defined(KERNELSCAN_GPU_CUDA)
// User sources are HIP. On NVIDIA they see this header in place of each HIP header a kernel may
// include (source_policy.hpp): the CUDA built-ins under the HIP names kernels commonly use.
constexpr const char* k_hip_runtime_shim = R"(#pragma once
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
)";
constexpr const char* k_shim_names[] = {"hip/hip_runtime.h", "hip/hip_fp16.h", "hip/hip_bfloat16.h",
                                        "hip/hip_bf16.h"};
#endif

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

module_cache::module_cache(std::string arch) : m_arch(std::move(arch)) {}

module_cache::~module_cache() {
  for (auto& [key, m] : m_modules)
    (void)hipModuleUnload(m.module);
}

void module_cache::trim() {
  if (m_modules.size() < k_max_modules) return;
  for (auto& [key, m] : m_modules)
    (void)hipModuleUnload(m.module);
  m_modules.clear();
}

hipFunction_t module_cache::function(const custom_kernel& kernel) {
  std::string key = m_arch + '\0' + kernel.entry + '\0';
  for (const auto& o : kernel.compile_options)
    key += o + '\0';
  key += kernel.source;
  if (auto it = m_modules.find(key); it != m_modules.end()) return it->second.function;

  program_owner prog;
#if defined(KERNELSCAN_GPU_CUDA)
  std::vector<std::string> names;
  for (auto h : allowed_kernel_includes())
    names.emplace_back(h);
  std::vector<const char*> shim_names, shim_sources;
  for (const auto& n : names) {
    shim_names.push_back(n.c_str());
    shim_sources.push_back(k_hip_runtime_shim);
  }
  rtc_check(hiprtcCreateProgram(&prog.program, kernel.source.c_str(), "kernel.hip",
                                int(shim_sources.size()), shim_sources.data(), shim_names.data()),
            "creating the program");
#else
  rtc_check(
      hiprtcCreateProgram(&prog.program, kernel.source.c_str(), "kernel.hip", 0, nullptr, nullptr),
      "creating the program");
#endif
  rtc_check(hiprtcAddNameExpression(prog.program, kernel.entry.c_str()), "naming the entry");

  std::vector<std::string> options;
#if defined(KERNELSCAN_GPU_CUDA)
  options.push_back("-arch=" + m_arch);
  options.push_back("-default-device");
#ifdef KERNELSCAN_CUDA_INCLUDE_DIR
  options.push_back("--include-path=" KERNELSCAN_CUDA_INCLUDE_DIR);
#endif
#else
  options.push_back("--offload-arch=" + m_arch);
#endif
  options.push_back("-std=c++17");
  for (const auto& o : kernel.compile_options)
    options.push_back(o);
  std::vector<const char*> argv;
  for (const auto& o : options)
    argv.push_back(o.c_str());

  const hiprtcResult compiled = hiprtcCompileProgram(prog.program, int(argv.size()), argv.data());
  if (compiled != HIPRTC_SUCCESS) {
    std::string log = program_log(prog.program);
    throw compile_error("the kernel did not compile (" +
                        std::string(hiprtcGetErrorString(compiled)) + ")" +
                        (log.empty() ? "" : ":\n" + log));
  }
  const char* lowered = nullptr;
  if (hiprtcGetLoweredName(prog.program, kernel.entry.c_str(), &lowered) != HIPRTC_SUCCESS ||
      !lowered) {
    throw compile_error("entry \"" + kernel.entry +
                        "\" is not a __global__ function of the source");
  }
  const std::string symbol = lowered;
  std::size_t size = 0;
  rtc_check(hiprtcGetCodeSize(prog.program, &size), "reading the code size");
  std::vector<char> code(size);
  rtc_check(hiprtcGetCode(prog.program, code.data()), "reading the code");

  loaded m;
  check(hipModuleLoadData(&m.module, code.data()), "loading the compiled module");
  const hipError_t found = hipModuleGetFunction(&m.function, m.module, symbol.c_str());
  if (found != hipSuccess) {
    (void)hipModuleUnload(m.module);
    throw compile_error("entry \"" + kernel.entry + "\" was not found in the compiled module (" +
                        hipGetErrorString(found) + ")");
  }
  m_modules.emplace(std::move(key), m);
  return m.function;
}

}  // namespace kernelscan::gpu

#pragma once
// Run-time compilation of user kernels (hipRTC on AMD, NVRTC on NVIDIA) into loaded modules,
// cached by source, options, entry and architecture so that the points of a sweep compile once.
// Compiled by hipcc or nvcc only.
//
// Threading: one per engine, used from the worker's thread. Owns its modules.

#include <map>
#include <string>

#include "engine/hip/gpu.hpp"
#include "engine/hip/rtc_compile.hpp"
#include "engine/kernel_spec.hpp"

namespace kernelscan::gpu {

class module_cache {
 public:
  // `arch`: the device's architecture as the compiler names it ("gfx942", "sm_90").
  explicit module_cache(std::string arch);
  module_cache(const module_cache&) = delete;
  module_cache& operator=(const module_cache&) = delete;
  ~module_cache();

  // The kernel's entry, compiled (compile_kernel) and loaded; throws compile_error,
  // unsupported_language_error or gpu_error.
  hipFunction_t function(const custom_kernel& kernel);
  std::size_t size() const { return m_modules.size(); }
  // Unloads everything once the cache holds many modules. Call between points only: functions
  // handed out before become invalid.
  void trim();

 private:
  struct loaded {
    hipModule_t module{};
    hipFunction_t function{};
  };
  std::string m_arch;
  std::map<std::string, loaded> m_modules;  // key: arch, language, entry, options and source
};

}  // namespace kernelscan::gpu

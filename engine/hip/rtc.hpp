#pragma once
// Run-time compilation of user kernels (hipRTC on AMD, NVRTC on NVIDIA) into loaded modules,
// cached by source, options, entry and architecture so that the points of a sweep compile once.
// Compiled by hipcc or nvcc only.
//
// Threading: one per engine, used from the worker's thread. Owns its modules.

#include <map>
#include <string>
#include <vector>

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
  // The same kernel in a module loaded again from the cached code object, so its globals hold
  // their initial values; valid until release_fresh().
  hipFunction_t fresh_function(const custom_kernel& kernel);
  // Unloads the modules fresh_function() loaded. Call between points only.
  void release_fresh();
  std::size_t size() const { return m_modules.size(); }
  // Unloads everything once the cache holds many modules. Call between points only: functions
  // handed out before become invalid.
  void trim();

 private:
  struct loaded {
    hipModule_t module{};
    hipFunction_t function{};
    compiled_kernel compiled;  // kept for fresh_function()
  };
  const loaded& find(const custom_kernel& kernel);

  std::string m_arch;
  std::map<std::string, loaded> m_modules;  // key: arch, language, entry, options and source
  std::vector<hipModule_t> m_fresh;
};

}  // namespace kernelscan::gpu

#pragma once
// Run-time compilation of a user kernel (hipRTC on AMD, NVRTC on NVIDIA) into a code object,
// without loading it: no device is needed, so GPU builds check it on machines without a GPU
// (tests/gpu/rtc_compile_test.cpp). Implemented in rtc.hip; this header names no GPU runtime
// type, so plain C++ may include it. module_cache (rtc.hpp) loads what this compiles.
//
// The headers a kernel may include (source_policy.hpp) reach the compiler two ways: through the
// compiler's header API (on NVIDIA, HIP's names as our mapping onto CUDA; on AMD, the HIP
// headers hipRTC builds in) and through the include folders found on this machine
// (rtc_headers.hpp).
//
// Thread-safe.

#include <stdexcept>
#include <string>
#include <vector>

#include "engine/device_backend.hpp"
#include "engine/kernel_spec.hpp"

namespace kernelscan::gpu {

// The source did not compile, or has no such entry; what() carries the compiler's log
// (device_backend.hpp).
using kernelscan::compile_error;

// The kernel's language is not one this platform compiles (cuda on AMD): a problem of the point,
// not of the source.
class unsupported_language_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct compiled_kernel {
  std::vector<char> code;  // a code object for `arch`: HSA code object on AMD, cubin on NVIDIA
  std::string symbol;      // the entry's name in it (lowered, for a C++ entry)
};

// `arch`: the device's architecture as the compiler names it ("gfx942", "sm_90"). Throws
// compile_error or unsupported_language_error.
compiled_kernel compile_kernel(const custom_kernel& kernel, const std::string& arch);

// Where this machine's compiler headers were found ("CUDA headers from $CUDA_HOME:
// /usr/local/cuda/include, ..."): logged once, and added to compile errors about missing files.
const std::string& rtc_header_note();

}  // namespace kernelscan::gpu

#pragma once
// Which devices can compile a user kernel's language (kernel_spec.hpp): HIP on every GPU of the
// HIP engine (hipRTC on AMD, NVRTC on NVIDIA), CUDA C++ on its NVIDIA GPUs only, OpenCL C on
// OpenCL devices only. The mock engine compiles nothing, so it takes HIP and OpenCL C (whose
// timings it simulates) but refuses CUDA, which no device of its kind could run. Pure functions;
// thread-safe.

#include <optional>
#include <string>

#include "engine/device_info.hpp"
#include "engine/job_spec.hpp"

namespace kernelscan {

// "device 0 (AMD Instinct MI300X, gfx942)": a device as refusals name it.
std::string device_words(const device_info& d);

// Why `device` cannot run a kernel in `language`, or nullopt if it can. The reason names the
// device and what to do instead.
std::optional<std::string> unsupported_language(kernel_language language,
                                                const device_info& device);

// The same for every user kernel of a job: the kernel, a custom reference and a custom fitness
// baseline. The reason starts with the field ("kernel.language: ...").
std::optional<std::string> unsupported_language(const job_spec& spec, const device_info& device);

}  // namespace kernelscan

#pragma once
// What a job needs of a device beyond its engine and kernel language, and whether a device has
// it (device_capabilities): f64 arithmetic for the built-in ops and the fills of f64 buffers, and
// each GEMM's element type in the implementation it asks for (an OpenCL device's CLBlast has f16
// only with cl_khr_fp16; a GPU build may have no GEMM library). A submission no live device can
// run is refused naming the field; the queue offers a device only the jobs whose needs it has,
// which the store matches as bits (job_needs, device_lacks). A user kernel's own code is not
// read: a device that cannot compile it says so in the compiler's words. Pure functions;
// thread-safe.

#include <cstdint>
#include <optional>
#include <string>

#include "engine/device_info.hpp"
#include "engine/job_spec.hpp"

namespace kernelscan {

// One bit per need; a store keeps a job's needs and claims with a device's lacks.
using need_bits = std::uint32_t;

// Every need of `spec`: its kernel, variants, fitness baseline and their references.
need_bits job_needs(const job_spec& spec);

// The needs a device with `c` cannot meet, of every need there is.
need_bits device_lacks(const device_capabilities& c);

// Why `device` cannot run `spec` for want of a capability, as "field: reason" (the reason names
// the device and what to do instead), or nullopt if it has every one the job needs.
std::optional<std::string> unmet_need(const job_spec& spec, const device_info& device);

}  // namespace kernelscan

#pragma once
// Which devices the daemon serves, from what its probe found and --engine. A physical GPU is
// owned by exactly one worker: an OpenCL GPU that is also a HIP GPU (the same PCI address, or,
// where OpenCL cannot tell its address, any HIP GPU of the same vendor) is served through HIP.
//
//   auto    HIP GPUs, then OpenCL GPUs and accelerators that are not one of them; mock devices
//           when that is none (a CPU is never chosen for you)
//   hip     HIP GPUs only
//   opencl  every OpenCL device, CPUs included (PoCL)
//   mock    mock devices only
//   all     HIP GPUs, every OpenCL device that is not one of them, and mock devices
//
// Pure functions; thread-safe.

#include <string>
#include <vector>

#include "engine/device_info.hpp"

namespace kernelscan {

inline constexpr const char* k_engine_choices[] = {"auto", "hip", "opencl", "mock", "all"};

// The real devices to serve, in order (HIP first), from the probe's list (HIP and OpenCL).
std::vector<device_info> select_devices(const std::string& engine,
                                        const std::vector<device_info>& probed);

// Whether an OpenCL device is a GPU that HIP already serves.
bool served_by_hip(const device_info& opencl_device, const std::vector<device_info>& hip_gpus);

}  // namespace kernelscan

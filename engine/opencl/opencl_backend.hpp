#pragma once
// The OpenCL engine: the point runner over the OpenCL backend, for any device an OpenCL driver
// exposes through the ICD loader (NVIDIA, AMD ROCm and Intel GPUs; PoCL on the CPU). User kernels
// are OpenCL C (`"language": "opencl"`, a __kernel entry), built for the device with the job's
// options; `grid` × `block` is the global size and `block` the work-group size; work-group local
// memory is an argument kind. Built-in ops: STREAM, the builtin tiled GEMM (OpenCL C) and the
// library GEMM through CLBlast.
//
// Devices are numbered across platforms in the ICD loader's order (platform by platform, device
// by device), the same in every process of the machine.
//
// This header includes no OpenCL header.

#include <memory>
#include <vector>

#include "engine/engine.hpp"

namespace kernelscan {

// Every OpenCL device of every platform, described as the worker reports it; empty when there is
// no ICD loader or platform (the reason is logged). Never throws.
std::vector<device_info> discover_opencl_devices();

// An engine on OpenCL device `index`; throws std::runtime_error when it cannot be opened.
std::unique_ptr<engine> make_opencl_engine(int index);
// The same engine with its defences against gamed scores on or off (point_runner.hpp), for the
// benchmark of what they cost.
std::unique_ptr<engine> make_opencl_engine(int index, bool defences);

}  // namespace kernelscan

#pragma once
// The engine for real GPUs: the point runner (point_runner.hpp) over the HIP backend, written
// against the HIP API and built by hipcc for AMD or by nvcc for NVIDIA (engine/hip/runtime.hpp
// maps the names). This header includes no GPU runtime, so the worker and the tests use it from
// plain C++.
//
// It exists only in builds configured with KERNELSCAN_GPU=hip or cuda (KERNELSCAN_HAVE_GPU).

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.hpp"

namespace kernelscan {

// The GPUs this process's runtime sees, described as the worker reports them; empty when there
// are none or no driver (the reason is logged). Never throws. A HIP runtime may abort the
// process when it finds no device, so the daemon calls this in a child (`worker --probe`).
std::vector<device_info> discover_gpus();

// An engine on GPU `ordinal`; throws std::runtime_error when the device cannot be opened.
std::unique_ptr<engine> make_hip_engine(int ordinal);
// The same engine with its defences against gamed scores on or off (point_runner.hpp), for the
// benchmark of what they cost.
std::unique_ptr<engine> make_hip_engine(int ordinal, bool defences);

// The platform this build's engine runs on and its runtime version: "CUDA 13.0", "HIP 5.2".
std::string gpu_platform();

}  // namespace kernelscan

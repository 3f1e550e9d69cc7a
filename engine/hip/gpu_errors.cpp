#include "engine/hip/gpu_errors.hpp"

#include <algorithm>
#include <array>

namespace kernelscan::gpu {
namespace {

// cudaError / hipError numbers (CUDA 13's driver_types.h, HIP's hip_runtime_api.h).
constexpr int k_invalid_value = 1;
constexpr int k_memory_allocation = 2;
constexpr int k_invalid_configuration = 9;
constexpr int k_invalid_kernel_image = 200;
constexpr int k_no_kernel_image_for_device = 209;
constexpr int k_invalid_ptx = 218;
constexpr int k_jit_compiler_not_found = 221;
constexpr int k_unsupported_ptx_version = 222;
constexpr int k_launch_out_of_resources = 701;
constexpr int k_cooperative_launch_too_large = 720;
constexpr int k_invalid_cluster_size = 912;

constexpr std::array<int, 17> k_context_lost{
    214,   // ECC uncorrectable
    220,   // NVLink uncorrectable
    226,   // contained: the process must be terminated
    700,   // illegal address
    702,   // launch timeout
    709,   // context is destroyed
    710,   // device-side assert
    714,   // hardware stack error
    715,   // illegal instruction
    716,   // misaligned address
    717,   // invalid address space
    718,   // invalid PC
    719,   // launch failure (the kernel faulted)
    721,   // tensor memory leak: the kernel exited holding tensor memory
    911,   // external device
    1052,  // HIP: HSA runtime memory error
    1053,  // HIP: other HSA runtime error
};

bool contains(const auto& list, int code) {
  return std::find(list.begin(), list.end(), code) != list.end();
}

}  // namespace

fault_kind classify_gpu_error(int code) {
  if (contains(k_context_lost, code)) return fault_kind::device_lost;
  if (code == k_memory_allocation) return fault_kind::out_of_memory;
  if (code == k_invalid_value || code == k_invalid_configuration ||
      code == k_launch_out_of_resources || code == k_cooperative_launch_too_large ||
      code == k_invalid_cluster_size) {
    return fault_kind::invalid_launch;
  }
  if (code == k_invalid_kernel_image || code == k_no_kernel_image_for_device ||
      code == k_invalid_ptx || code == k_jit_compiler_not_found ||
      code == k_unsupported_ptx_version) {
    return fault_kind::unsupported;
  }
  return fault_kind::internal;
}

std::string gpu_error_hint(int code) {
  switch (code) {
    case k_launch_out_of_resources:
      return "the kernel needs more registers or shared memory per block than the device has "
             "for this block size: use a smaller block";
    case k_invalid_configuration:
      return "the block or grid size is beyond what the device allows (at most 1024 threads a "
             "block, and the dynamic shared memory it can give)";
    case k_no_kernel_image_for_device:
    case k_invalid_kernel_image:
      return "this build has no code for the device's architecture: build for it "
             "(KERNELSCAN_HIP_ARCHITECTURES or KERNELSCAN_CUDA_ARCHITECTURES)";
    case k_unsupported_ptx_version:
      return "the driver is older than the toolkit that built this code: update the driver";
    default:
      return classify_gpu_error(code) == fault_kind::device_lost
                 ? "the device context is unusable after this; a fresh worker takes over"
                 : "";
  }
}

}  // namespace kernelscan::gpu

#pragma once
// Datasheet figures of the GPUs kernelscan knows (DESIGN.md §5): dense peak throughput per
// dtype (matrix cores where the part has them), memory bandwidth, caches. The mock engine
// imitates these models; the HIP engine matches discovered devices against them.
// Units: TFLOP/s (TOP/s for i8), GB/s (1e9 bytes/s), bytes, MHz. Immutable; thread-safe.

#include <cstdint>
#include <span>
#include <string_view>

#include "engine/dtype.hpp"

namespace kernelscan {

struct device_peaks {
  double f64_tflops = 0;
  double f32_tflops = 0;  // the best f32 rate: matrix (AMD) or CUDA cores (NVIDIA, no TF32)
  double f16_tflops = 0;
  double bf16_tflops = 0;
  double i8_tops = 0;
  double vector_f32_tflops = 0;  // without matrix cores
  double bandwidth_gbps = 0;

  // The ceiling for work in `t`: f32, f16 and bf16 at the higher of their own peak and the
  // vector f32 peak (work in them may run on the vector units); integer types other than i8 at
  // the vector f32 rate.
  double tflops_for(dtype t) const;
};

struct device_model {
  std::string_view key;     // catalog key and --mock-model value: "MI300X", "H100-SXM"
  std::string_view vendor;  // "AMD", "NVIDIA"
  std::string_view name;    // marketing name
  std::string_view arch;    // gfx942, sm_90
  int compute_units = 0;    // CUs or SMs
  double clock_mhz = 0;     // peak engine clock
  std::uint64_t memory_bytes = 0;
  std::uint64_t l2_bytes = 0;
  std::uint64_t llc_bytes = 0;   // last-level cache beyond L2 (Infinity Cache), 0 if none
  double launch_latency_us = 0;  // typical smallest event-timed kernel duration
  device_peaks peaks;
};

std::span<const device_model> device_catalog();
// Case-insensitive; also accepts a few aliases ("H100" for "H100-SXM"). nullptr if unknown.
const device_model* find_device_model(std::string_view key);
// The catalog model a discovered device's name names ("AMD Instinct MI300X", "NVIDIA H100 80GB
// HBM3"), nullptr if none: an unknown part gets no datasheet peaks rather than wrong ones.
const device_model* match_device_model(std::string_view name);

}  // namespace kernelscan

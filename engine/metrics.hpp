#pragma once
// Throughput and roofline position of a measured point (DESIGN.md §5), against datasheet peaks.
// Pure functions; thread-safe.

#include <string_view>

#include "engine/device_catalog.hpp"
#include "engine/kernel_instance.hpp"
#include "engine/point_result.hpp"

namespace kernelscan {

// The dtype whose peak bounds the kernel: the op's dtype, or a custom kernel's first floating
// output buffer (f32 if it has none).
dtype roof_dtype(const kernel_instance& k);

// `launch_latency_us`: below this ideal time a kernel is latency-bound whatever its intensity,
// as long as it takes no more than k_latency_bound_launches launches' time (one that takes far
// longer is limited by its own code, and is bound as its intensity says).
// `flops` and `bytes` are per launch; `roof_type` picks the compute ceiling (roof_dtype).
// `roof_source` names where `peaks` come from: "datasheet", "measured", or "measured_again"
// (the device's measured roofline with a ceiling measured again for the point: analysis.hpp).
inline constexpr double k_latency_bound_launches = 4;

point_metrics compute_metrics(double flops, double bytes, dtype roof_type, double median_us,
                              const device_peaks& peaks, double launch_latency_us,
                              std::string_view roof_source = "datasheet");
point_metrics compute_metrics(const kernel_instance& k, double median_us, const device_peaks& peaks,
                              double launch_latency_us, std::string_view roof_source = "datasheet");

// The least time a launch of `flops` and `bytes` can take under `peaks`: max(flops / peak,
// bytes / bandwidth), in microseconds. `count_bytes` false leaves memory out (a hot working set
// that fits in cache may legitimately beat DRAM bandwidth). 0 when a ceiling is unknown.
double physical_floor_us(double flops, double bytes, dtype roof_type, const device_peaks& peaks,
                         bool count_bytes);

}  // namespace kernelscan

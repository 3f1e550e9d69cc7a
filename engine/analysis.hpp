#pragma once
// What kernelscan concludes from a measured point (DESIGN.md §4 and §5): its roofline metrics,
// the anti-cheat flags, prioritised advice, and its fitness. Every engine finishes a point with
// analyse_point(), so the mock and the GPU engines judge alike.
// Pure functions, but for what analysis_context::bandwidth_at measures; thread-safe where it is.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/device_catalog.hpp"
#include "engine/fitness.hpp"
#include "engine/job_spec.hpp"
#include "engine/kernel_instance.hpp"
#include "engine/point_result.hpp"

namespace kernelscan {

// What the analysis knows of the device a point ran on.
struct analysis_context {
  device_peaks datasheet;                // zeros where the part is not in the catalog
  std::optional<device_peaks> measured;  // the device's empirical roofline, once measured
  double launch_latency_us = 0;          // below this ideal time a kernel is latency-bound
  std::uint64_t cache_bytes = 0;         // L2 plus any last-level cache
  double roofline_allowance = 0.10;      // see k_roofline_allowance
  bool cpu = false;                      // a CPU device: advice for one (advise)
  // Where set, measures the device's cold bandwidth (GB/s) again over about `bytes` of working
  // set; 0 where it could not. A point that beats a measured bandwidth ceiling is judged by the
  // higher of the two before it is flagged faster_than_roofline: a ceiling measured once, while
  // other work shared the machine, or over a working set larger than the point's (a cold set
  // that part of a large last-level cache still holds streams faster), would void an honest
  // kernel's score. The re-measurement is the device's own STREAM kernel, which nothing the
  // candidate does can speed up.
  std::function<double(double bytes)> bandwidth_at;
  // Where set, measures the device's vector f32 peak (TFLOP/s, the FMA kernel) again; 0 where it
  // could not. A point whose work alone puts its floor above its median, by a measured ceiling,
  // is judged by the ceiling that peak raises before it is flagged (a peak measured while other
  // work shared a CPU device's cores reads low).
  std::function<double()> vector_peak_again;
  const device_peaks& ceilings() const { return measured ? *measured : datasheet; }
};

// A point whose median is more than this fraction below the physical floor is flagged
// faster_than_roofline: the allowance covers the noise of the measured ceilings themselves. A
// CPU shares its caches and memory with the host's other work, so the ceilings measured on it
// vary more: it gets k_cpu_roofline_allowance.
inline constexpr double k_roofline_allowance = 0.10;
inline constexpr double k_cpu_roofline_allowance = 0.25;
// The norm-relative error at and above which an f32 (f64) output shows the rounding of a
// narrower type's arithmetic (f16, bf16, TF32; f32 for f64): precision_mismatch.
double narrow_arithmetic_error(dtype out_type);
// ... and at and below which: bf16 rounding (8 significant bits) of a long sum stays within a few
// percent, and an output further off (zeros: 1) is wrong, not computed in a narrower type.
inline constexpr double k_narrow_arithmetic_ceiling = 0.05;
// A speedup over the baseline above this is flagged excessive_speedup (a warning).
inline constexpr double k_excessive_speedup = 10.0;
// A timed median below this share of the fastest verification launch is flagged
// (faster_than_verification, a warning): the kernel ran far faster unwatched. Only for launches
// long enough that clocks and launch latency cannot explain it and timed with their bytes where
// verification's were (from DRAM: cold caches, or a working set larger than them; a verification
// launch follows fresh inputs and a scrub of local memory, which on a CPU device evicts the
// caches, so against hot samples of a working set the caches hold an honest launch alone may
// well be four times slower), or for batched samples, whose launches run back to back on one
// set of inputs: a batch is never four times faster per launch than the same kernel launched
// alone, unless it skips work after its first launch.
inline constexpr double k_faster_than_verification = 0.25;
inline constexpr double k_verification_launch_min_us = 50;

// Flags from a verification: timed_output_mismatch (a checked timed sample was wrong),
// input_modified (the kernel wrote to a buffer given to it as an input), out_of_bounds_write (it
// wrote into a canary region around a buffer), low_signal_reference (most reference outputs are
// within atol of zero), precision_mismatch (an f32/f64 output with the norm-relative error of a
// narrower type's arithmetic, passing or not), verification_failed, and what the failure looks
// like: output_not_written (outputs left NaN), precision_mismatch (errors within f16's tolerance
// but not the declared dtype's).
std::vector<std::string> verification_flags(const verification_result& v, dtype out_type);

// Prioritised advice for a measured point, most useful first.
// `resources` (a user kernel's registers, memory and occupancy, where the platform tells) make
// the occupancy advice specific and add the local memory a kernel spills to. `cpu`: the device
// is a CPU (an OpenCL CPU driver), whose advice speaks of SIMD loops and cores, not of
// coalescing, warps, occupancy or matrix cores.
std::vector<std::string> advise(const point_metrics& m, const kernel_instance& k, l2_mode l2,
                                const std::optional<kernel_resources>& resources = std::nullopt,
                                bool cpu = false);

// A point sampled fewer than k_ci95_min_samples times (statistics.hpp) has no 95% interval of
// its median: what timing setting gives it the samples (a longer max_time_ms, at the time a
// sample took; a larger max_samples). None for a point with enough samples.
std::optional<std::string> sampling_advice(const point_result& r, const timing_options& t);

// Fills r.metrics, r.flags, r.advice and r.fitness of a point that measured (r.time_us set);
// a failed point gets only its fitness (score 0). `speedup` is set when the job has a baseline.
void analyse_point(point_result& r, const kernel_instance& k, const job_spec& spec,
                   const analysis_context& ctx, const std::optional<speedup_estimate>& speedup);

}  // namespace kernelscan

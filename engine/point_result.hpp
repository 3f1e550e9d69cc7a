#pragma once
// The measured outcome of one sweep point: the row the API returns and SQLite stores.
// Times in microseconds; throughput in TFLOP/s and GB/s. Plain value.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/adaptive_sampler.hpp"  // batch_correction
#include "engine/job_spec.hpp"
#include "engine/statistics.hpp"

namespace kernelscan {

enum class point_status { ok, failed };
std::string_view to_string(point_status s);

// Why a point failed. Types: device_fault, timeout, invalid_point, out_of_memory,
// compile_error, internal.
struct point_error {
  std::string type;
  std::string message;
};

struct verification_result {
  std::string status = "skipped";  // passed, failed, skipped
  int trials = 0;
  int launches = 0;  // of the kernel: one per trial, and up to two more, unchecked
  double max_abs_err = 0;
  double max_rel_err = 0;
  std::uint64_t unwritten = 0;  // output elements still NaN after the kernel ran
  double tolerance = 0;         // the rtol/atol the outputs were held to
  std::string note;             // why skipped, or what failed
  // The kernel's verification launches are timed too: the fastest of them (µs). Where timed
  // samples are batches, the median of single launches timed just before sampling counts too.
  std::optional<double> launch_us;
  // Timed samples whose outputs were compared with the reference on the same inputs, and the
  // output elements that failed there (a kernel correct only while verified).
  int timed_checks = 0;
  std::uint64_t timed_wrong = 0;
  int timed_failed = 0;  // checked timed samples that failed, elementwise or by the norm test
  // Probes of a batch's sets: its first launch alone, the buffers of others watched.
  int batch_probes = 0;
  // Batched samples timed launch by launch (drawn among the samples, and the last check), and
  // of the launch at each place in the batch the medians over them of its time against the
  // sample's lower quartile of launches, as a ratio and as the time between them, at the place
  // where the ratio is highest (the first launch less the sample's fixed cost where the device
  // has one): launches of a batch doing the same work take about as long as each other, and one
  // doing others' work takes the time they were spared. None where fewer than
  // k_min_split_samples were split. Where the ratio is above k_uneven_launches, how far honest
  // launches as long stray on the device (builtin_launch_excess_us(); 0 where it could not be
  // measured): the excess above k_uneven_over_builtin times that as well is uneven_launches.
  int split_samples = 0;
  std::optional<double> launch_spread;
  std::optional<double> launch_excess_us;
  std::optional<double> builtin_excess_us;
  // Input buffers whose contents the kernel changed in a verification launch (`scratch`
  // buffers, which a kernel may write, are not inputs).
  std::vector<std::string> inputs_written;
  // ‖out − ref‖₂ / ‖ref‖₂, the largest over the trials; outputs fail where it exceeds rtol.
  double norm_rel_err = 0;
  // The share of the reference's output elements within atol of zero (the largest over the
  // trials): above k_low_signal_share, a constant output comes close to passing.
  double ref_near_zero = 0;
  // The share of them that are NaN or infinite (the largest over the trials): a reference that
  // read an output before writing it, and found the unwritten NaN, answers NaN, which any output
  // of NaN matches. Counted with ref_near_zero against k_low_signal_share.
  double ref_not_finite = 0;
  // Buffers before whose start or past whose end the kernel wrote, into the canary regions
  // around each one.
  std::vector<std::string> written_out_of_bounds;
};

// A reference with more than this share of its outputs within atol of zero, or NaN or infinite,
// says little about a kernel: low_signal_reference.
inline constexpr double k_low_signal_share = 0.9;

// A launch spread above k_uneven_launches whose excess is above k_uneven_over_builtin times a
// built-in kernel's is uneven_launches; fewer split samples than k_min_split_samples give none.
inline constexpr double k_uneven_launches = 3.0;
inline constexpr double k_uneven_over_builtin = 2.0;
inline constexpr int k_min_split_samples = 3;

// Whether a verification's launch spread is uneven_launches (above).
bool uneven_launches(const verification_result& v);

// The score an agent optimises (DESIGN.md §4; the rule is in the README under "Fitness").
struct point_fitness {
  bool correct = false;
  std::optional<double> speedup;  // baseline median / candidate median, from paired samples
  std::optional<std::pair<double, double>> speedup_ci95;
  std::optional<double> baseline_us;
  std::optional<double> latency_score;  // target_us / median_us (not capped)
  double combined_score = 0;
};

struct point_metrics {
  double flops = 0;                 // per launch
  double bytes = 0;                 // per launch
  double tflops = 0;                // flops / median time
  double gbps = 0;                  // bytes / median time
  double arithmetic_intensity = 0;  // flops / byte
  double roof_tflops = 0;           // attainable at this intensity: min(peak, AI * bandwidth)
  double roof_pct = 0;              // achieved / attainable, percent
  std::string bound;                // memory, compute, latency
  std::string roof_source;          // datasheet, measured, measured_again (metrics.hpp)
};

// What the device's compiler gave a user kernel, and what that allows at the point's launch
// size, as the platform reports it (the HIP engine: hipFuncGetAttribute and the occupancy
// calculator, CUDA's the same; OpenCL: clGetKernelWorkGroupInfo). nullopt where the platform
// does not say: OpenCL has no register count or occupancy, and a CPU device's private memory
// figure is not the kernel's (PoCL answers the same 1 KiB for every kernel), so it is left out.
struct kernel_resources {
  std::optional<int> registers;                   // per thread
  std::optional<std::uint64_t> shared_bytes;      // per block at this launch: declared and dynamic
  std::optional<std::uint64_t> local_bytes;       // per thread: spilled registers, private arrays
  std::optional<std::int64_t> max_block_threads;  // the most a block of this kernel may have
  std::optional<std::int64_t> block_multiple;     // OpenCL: preferred work-group size multiple
  // The launch's blocks one compute unit (SM, CU) holds at once, their warps (wavefronts) over
  // the most it can hold, and the limits that allow no more (registers, shared_memory, threads,
  // blocks; engine/occupancy.hpp): empty where its arithmetic does not agree with the runtime's.
  std::optional<int> blocks_per_unit;
  std::optional<double> occupancy;
  std::vector<std::string> limited_by;
};

struct point_environment {
  std::string device;
  std::string driver;
  double clock_mhz = 0;
  std::optional<double> temperature_c;
  std::optional<double> power_w;
};

// Statistics of a point measured elsewhere, in microseconds, as far as its source gives them
// or its data allows computing them; nullopt where it says nothing (a summary has no confidence
// interval), so that no row carries a number nobody measured.
struct imported_stats {
  std::optional<double> mean, median, min, max, stddev, p5, p95, p99, ci95_low, ci95_high,
      rel_noise;
};

// Where an imported point came from (POST /api/v1/imports) and what its analysis could not
// do. Measured points have none.
struct point_origin {
  std::string format;  // rocm_profiler, rocprofv3_kernel_trace, nsys_cuda_gpu_kern_sum
  std::string type;    // the source's kind of component (rocm_profiler "type": HIP, Triton), or ""
  imported_stats time_us;              // the row's time_us
  std::optional<std::uint64_t> calls;  // launches the statistics summarise, where known
  std::optional<double> total_us;      // their summed time
  std::optional<double> time_pct;      // share of the source's total kernel time, percent
  bool roofline = false;               // metrics carry roof_tflops, roof_pct and bound
  std::vector<std::string> notes;      // what could not be analysed, and why
};

// A variant's speedup over another variant of the same point (job_spec::variants): the median of
// the paired ratios other/this of their interleaved samples, with its 95% interval.
struct variant_speedup {
  std::string over;  // the other variant's name
  double speedup = 0;
  std::optional<double> ci95_low, ci95_high;  // none with too few samples for a 95% interval
};

// How a variant compares with the others at its point: over the slowest variant there (1 for
// that one), and over the job's baseline variant when it names one. Absent where the other
// failed.
struct variant_comparison {
  std::optional<variant_speedup> over_slowest;
  std::optional<variant_speedup> over_baseline;
};

struct point_result {
  std::uint64_t index = 0;
  // The variant measured (job_spec::variants); nullopt for a job without variants.
  std::optional<std::string> variant;
  std::optional<variant_comparison> comparison;
  std::vector<std::pair<std::string, std::int64_t>> params;
  std::string name;  // imported points: the kernel or component as its source names it
  point_status status = point_status::ok;
  // The times come from a model, not a GPU (the mock engine): the kernel was neither compiled
  // nor run, and its verification, if any, is what `mock.output` asked for.
  bool simulated = false;
  std::optional<point_error> error;
  std::optional<time_summary> time_us;  // absent when the point failed before sampling
  std::size_t samples = 0;
  std::size_t discarded = 0;
  bool converged = false;
  std::string stop_reason;
  double sampling_ms = 0;  // GPU time spent sampling (simulated on the mock)
  std::int64_t batch = 1;  // launches per timed sample
  std::optional<batch_correction> batch_corrected;
  l2_mode l2 = l2_mode::cold;
  std::optional<point_metrics> metrics;
  // A user kernel's registers, shared and local memory and occupancy (custom kernels only).
  std::optional<kernel_resources> resources;
  verification_result verification;
  std::vector<std::string> flags;
  std::vector<std::string> advice;
  point_fitness fitness;
  point_environment environment;
  std::optional<point_origin> origin;  // imported points only
};

// A failed point: the index and params of `index`, status failed, and `flags` carrying the error
// type when it is one of the anti-cheat flags (device_fault, timeout).
point_result failed_point(std::uint64_t index,
                          std::vector<std::pair<std::string, std::int64_t>> params,
                          std::string type, std::string message);

}  // namespace kernelscan

#pragma once
// A profiling job as submitted: what to measure (kernel), over which points (sweep), how
// (timing, verification), and where (engine, device). Validated by the api/ codec; plain values.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/kernel_spec.hpp"
#include "engine/sweep.hpp"

namespace kernelscan {

// `any` is the wire's "auto". `imported` (the wire's "import"): results measured elsewhere and
// imported (POST /api/v1/imports); no engine here runs such a job and no submission asks for it.
enum class engine_kind { any, mock, hip, opencl, imported };
std::string_view to_string(engine_kind e);
// The wire's spelling back to the kind ("auto" is any); nullopt for anything else.
std::optional<engine_kind> parse_engine_kind(std::string_view s);

enum class l2_mode { cold, hot };
std::string_view to_string(l2_mode m);

// How a point is sampled (DESIGN.md §3). Times in milliseconds.
struct timing_options {
  l2_mode l2 = l2_mode::cold;
  int warmup = 3;  // untimed launches before sampling
  int min_samples = 10;
  int max_samples = 100000;         // bounds memory and the time of a runaway point
  double min_time_ms = 10.0;        // GPU time sampled before the noise test may stop
  double max_time_ms = 2000.0;      // stop here even if not converged (converged: false)
  double target_rel_noise = 0.005;  // relative standard error of the median
  bool operator==(const timing_options&) const = default;
};

struct verify_options {
  int trials = 3;              // fresh seeded inputs each trial; 0 disables verification
  std::optional<double> atol;  // default per dtype (dtype.hpp)
  std::optional<double> rtol;
  bool operator==(const verify_options&) const = default;
};

// How a job is scored for agents (DESIGN.md §4, README "Fitness"): against a baseline kernel
// measured interleaved with the candidate at every point, and/or a target time.
struct fitness_options {
  std::optional<kernel_spec> baseline;
  std::optional<double> target_us;
  double correctness_weight = 0.5;  // in [0, 1]
  // A point's combined score counts at most this much (in [1, 1e6]): one outlier point cannot
  // carry the job's geometric mean.
  double score_cap = 10;
  bool operator==(const fitness_options&) const = default;
};

enum class mock_fault { none, crash, hang, abort };
std::string_view to_string(mock_fault f);

// Options only the mock engine reads.
struct mock_options {
  double delay_ms = 0;  // wall time each point takes, for tests of long jobs
  // Fault injection (tests only; the daemon refuses it unless started with
  // --allow-fault-injection). `fault_index` limits the fault to one point.
  mock_fault fault = mock_fault::none;
  std::optional<std::uint64_t> fault_index;
  // The candidate runs this many times faster than the model says (anti-cheat tests).
  double speedup = 1.0;
  // What the simulated kernel writes, for tests of verification and its flags: nullopt keeps
  // verification "skipped" (the mock runs no device code); otherwise the mock reports what a
  // real check of such output would: correct, wrong, unwritten, half_written, low_precision.
  std::optional<std::string> output;
  bool operator==(const mock_options&) const = default;
};

// One of several kernels a job measures side by side: its name and the kernel it is, the job's
// `kernel` with the variant's fields laid over it (or a kernel of its own where its op differs).
struct kernel_variant {
  std::string name;  // [A-Za-z0-9_.-]{1,64}, unique in the job
  kernel_spec kernel;
  bool operator==(const kernel_variant&) const = default;
};

inline constexpr std::size_t k_min_variants = 2;
inline constexpr std::size_t k_max_variants = 16;

struct job_spec {
  std::string name;
  std::map<std::string, std::string> labels;
  engine_kind engine = engine_kind::any;
  // Placement (DESIGN.md §7): a device index (on whichever node, unless device_node names one),
  // only the devices of a node, only devices of a catalog model; all empty: any device.
  std::optional<int> device;
  std::optional<std::string> device_node;
  std::optional<std::string> device_model;
  int priority = 0;  // higher runs first
  // Without variants, the kernel measured; with them, the first variant's kernel (so that what
  // asks for "the job's kernel" - its op, its language - sees one of them).
  kernel_spec kernel;
  // Kernels measured side by side at every point, interleaved on one device (empty: `kernel`
  // alone). Every variant is measured at every point; rows name their variant.
  std::vector<kernel_variant> variants;
  // The variant the others are compared with (speedups, fitness); nullopt: none named.
  std::optional<std::string> baseline_variant;
  kernelscan::sweep sweep;
  timing_options timing;
  verify_options verify;
  fitness_options fitness;
  bool cache = true;  // a stored identical measurement may answer this job (result cache)
  // An evaluation task's job whose held-out points' scores only an operator sees: a candidate
  // sees the job's fitness over its public points alone (README "Tasks").
  bool private_held_out_scores = false;
  mock_options mock;
  std::optional<std::uint64_t> seed;  // the daemon fills it in when absent
  bool operator==(const job_spec&) const;
};

}  // namespace kernelscan

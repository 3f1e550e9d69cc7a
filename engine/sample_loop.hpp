#pragma once
// The timing loop of the point runner (DESIGN.md §3, after nvbench's measure_cold and its
// blocking kernel): warm-up, the batch decision, and adaptive sampling of one or more kernels
// interleaved on one device (A/B/A/B...) so that drift affects them alike. Written once over
// device_backend; the mock and every real backend time through it.
//
// Each sample: the kernel's `before` hook runs (untimed: the runner gives the inputs fresh
// values and re-poisons the outputs there), in cold mode the backend flushes the caches
// (untimed; in hot mode too where the hook wrote more than the caches hold, see
// timed_kernel::before_bytes), the backend times `batch` launches run back to back behind its queue
// hold, and the `after` hook runs (untimed: the runner checks the outputs of chosen samples there).
// Kernels shorter than k_batch_below_us in hot mode are batched to about k_batch_sample_us per
// sample and the time divided. Samples taken while telemetry says the device throttled, or whose
// hold gave up, are discarded.
//
// A sample's time carries a fixed cost besides its launches: the events around them, the first
// launch's start once the hold releases the queue. A batch shares it among its launches, so a
// kernel whose batch is held below what it would take (its buffer sets fit only so many in the
// caches) reads slower per launch than the same kernel batched freely: on an H100 an axpy of 2^20
// elements read 13-16% slower at 2 launches a sample than at 9. Such a kernel's samples are
// corrected to what the free batch reads: the time per launch, less the share of the fixed cost
// (measured on the device with a built-in kernel, sample_fixed_cost_us()) in the held batch,
// plus its share in the free one. Nothing a kernel does moves the fixed cost, and the free batch
// is the one a lone launch asks for as the kernel's samples (not its probes) put it, so the
// correction cannot be gamed.
// Cold kernels, free batches and devices whose fixed cost reads 0 (PoCL's profiling times a lone
// command from its own start) are not corrected.
//
// Threading: the worker's thread, like the backend it drives.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "engine/adaptive_sampler.hpp"
#include "engine/device_backend.hpp"

namespace kernelscan {

inline constexpr double k_batch_below_us = 10;   // hot kernels shorter than this are batched ...
inline constexpr double k_batch_sample_us = 50;  // ... to about this much device time per sample
inline constexpr std::int64_t k_max_batch = 200;
inline constexpr double k_telemetry_every_ms = 10;

// A kernel to sample: how to enqueue one launch of it, and whose it is.
struct timed_kernel {
  std::function<void()> launch;
  kernel_role role = kernel_role::candidate;
  std::int64_t batch = 1;  // set by sample_interleaved()
  // The most launches one sample may hold: a runner that gives each launch of a batch buffers
  // of its own has only so many sets of them.
  std::int64_t max_batch = k_max_batch;
  // The median of the single-launch probe samples of the batch decision (µs); 0 in cold mode.
  double single_us = 0;
  // Untimed, before each group of launches: `launches` of them follow, timed (a sample, the
  // probe samples of the batch decision included) or not (the warm-up). May be empty.
  std::function<void(std::int64_t launches, bool timed)> before = nullptr;
  // Bytes of device memory `before` writes. Where they exceed the device's caches, a hot sample
  // flushes them too: the hook's last writes would otherwise sit dirty in the caches, and the
  // kernel would pay their write-back (a 200 MB triad on an H200 ran 12% slower hot than cold,
  // and than back-to-back launches). The kernel's own data could not have stayed cached anyway.
  std::uint64_t before_bytes = 0;
  // Asked after `before` of a timed sample: whether its launches are timed one by one (a mark
  // after each, device_backend::mark_launch), each launch's time then in the sample `after`
  // gets (timed_sample::launch_us). Where the marks are not free (marks_are_free()), the
  // sample's time is not one of the kernel's samples. May be empty: never.
  std::function<bool()> split = nullptr;
  // Untimed, after each group of launches that `before` announced, with their sample (an empty
  // one after the warm-up). May be empty.
  std::function<void(const timed_sample&)> after = nullptr;
  // Untimed, once, as soon as the samples stop and before anything else runs (the samples'
  // statistics, a held batch's fixed cost measured on the device): the runner's last check,
  // which then follows the last sample as one sample follows another (`cold`: flushed before
  // as they were), so that a kernel reading a clock between its launches, or timing its first
  // loads, cannot tell it coming. May be empty.
  std::function<void(timed_kernel&, bool cold)> last = nullptr;
  // False: a batch held below the free one by max_batch is timed as it is, uncorrected (a runner
  // held to a batch on purpose, to measure what the batch does).
  bool corrects_held_batch = true;
  // Set by sample_interleaved() where its launches or hooks threw what it lets out: whose
  // failure it was, so that a point measuring several kernels fails that one's row only.
  bool threw = false;
};

// Launches per sample for a kernel whose probe samples (batch 1) had median `median_us`: 1 in
// cold mode (each launch needs its own flush) or when it is long enough, else enough to fill
// about k_batch_sample_us, at most k_max_batch.
std::int64_t batch_for(double median_us, l2_mode l2);

// The fixed cost of one timed sample on `backend` (µs, at least 0): from samples of one and of
// several launches of a short built-in kernel, (b * t(1) - t(b)) / (b - 1) with trimmed means of
// each. 0 where the device cannot run it or too many of its samples were invalid.
double sample_fixed_cost_us(device_backend& backend);

// A measurement of the device a runner keeps for its later points while it is fresh (a minute of
// the backend's clock), where measuring again would cost about as much as a short point.
struct kept_measurement {
  static constexpr double k_fresh_ms = 60'000;
  double value = 0;
  double measured_ms = 0;  // backend.clock_ms() when it was measured
  bool fresh(double now_ms) const { return now_ms - measured_ms <= k_fresh_ms; }
};

// The fixed cost of a sample as last measured (µs), for the next sampling on the same backend:
// measuring it takes dozens of samples (a few milliseconds on a GPU, tens on PoCL).
using fixed_cost_memo = std::optional<kept_measurement>;

// One sample of `k`: its before hook, the flush in cold mode (or after a hook that wrote more
// than the caches hold), `k.batch` launches timed (one by one where k.split says so), its after
// hook.
timed_sample take_sample(device_backend& backend, timed_kernel& k, bool cold);

// How uneven samples timed launch by launch were, at the place in their batch where the launch
// was slowest: for the launch at each place, the medians over the samples of its time against
// the sample's lower quartile of launches (the launch a quarter of the way up, by rank), as a
// ratio and as the time between them (µs), and the median quartile. `fixed_us` (a sample's
// fixed cost, which its first launch's time holds) is taken from the first launch first, which
// keeps half its time at least. A device that holds up a launch now and then does so at no one
// place in most samples; a kernel doing others' work at one launch of a batch does so at the
// same place in every sample it shortens. Samples of another length than the first are left
// out; none gives a ratio of 1.
struct launch_spread {
  double ratio = 1;
  double excess_us = 0;
  double quartile_us = 0;
};
launch_spread spread_of_launches(std::span<const std::vector<double>> samples, double fixed_us);

// The same of samples of `launches` launches of a short built-in kernel on `backend`, each
// about `launch_us` long, each sample after fills of as many buffers of `set_bytes` as a
// runner's sets: how far honest launches stray there (its excess, µs). `fixed_us` as above. 0
// where the device cannot time launches one by one.
double builtin_launch_excess_us(device_backend& backend, std::int64_t launches,
                                std::uint64_t set_bytes, double launch_us, double fixed_us);

// The fixed cost of a sample on `backend` (sample_fixed_cost_us), from `memo` while it is fresh,
// else measured and kept there.
double fixed_cost_us(device_backend& backend, fixed_cost_memo& memo);

// Warms each kernel up (timing.warmup launches, at least one, so that lazy loading and
// first-launch compilation never happen inside a timed sample), decides its batch, then samples
// them in turn until every sampler's rule stops in the same round. One result per kernel, in
// order; kernels[i].batch is set, and a hot kernel whose batch its max_batch held below the free
// one has its samples corrected as the header says. What a kernel's launches or hooks throw (the
// device synchronised after each one's warm-up, so that an asynchronous launch error shows there
// too) leaves with that kernel's `threw` set.
// `memo`, where given, keeps the fixed cost between calls.
std::vector<sampling_result> sample_interleaved(device_backend& backend,
                                                std::span<timed_kernel> kernels,
                                                const timing_options& timing,
                                                fixed_cost_memo* memo = nullptr);

}  // namespace kernelscan

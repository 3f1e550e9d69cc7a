#pragma once
// The stopping rule of DESIGN.md §3, shared by every engine: sample at least `min_samples` and
// `min_time_ms`, then stop once the relative standard error of the median is below
// `target_rel_noise`; give up at `max_time_ms` or `max_samples` (converged: false unless the
// noise target happens to be met then). Samples taken while the device throttled are discarded,
// up to as many as are kept.
//
// The engine owns the loop and the clock: it takes a sample, add()s it, and asks should_stop()
// with the sampling time elapsed on its own clock (wall time on a GPU, simulated on the mock).
// Not thread-safe; one per measurement.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/job_spec.hpp"
#include "engine/statistics.hpp"

namespace kernelscan {

// A hot batch held below the launches its kernel would take (its buffer sets fit only so many in
// the caches), read as the free batch would read it (sample_loop.hpp): the batch it would take,
// the fixed cost of a sample measured on the device (µs), and what was taken off the time per
// launch of every sample (µs).
struct batch_correction {
  std::int64_t free_batch = 0;
  double fixed_cost_us = 0;
  double us = 0;
};

struct sampling_result {
  std::vector<double> samples_us;  // kept samples, in the order taken
  std::size_t discarded = 0;       // samples dropped: taken while throttled, or invalid
  std::size_t throttled_kept = 0;  // throttled samples kept (too many to drop all)
  bool converged = false;
  double elapsed_ms = 0;
  std::string stop_reason;  // "noise_target", "max_time", "max_samples"
  time_summary summary;     // of samples_us; count 0 when every sample was discarded
  // Set by sample_interleaved() where it corrected a held batch; nullopt where it did not.
  std::optional<batch_correction> batch_corrected;
};

class adaptive_sampler {
 public:
  explicit adaptive_sampler(const timing_options& options);

  // An invalid sample (not the kernel's time) is always dropped. A throttled one is dropped
  // while fewer have been dropped than kept plus min_samples, else kept and counted: a device
  // that throttles under any load is measured as it runs, and a point never fails for it alone.
  void add(double time_us, bool throttled = false, bool invalid = false);
  // Evaluates the rule; once it returns true, call finish().
  bool should_stop(double elapsed_ms);
  sampling_result finish();

  std::size_t kept() const { return m_samples.size(); }

 private:
  timing_options m_options;
  std::vector<double> m_samples;
  std::vector<double> m_scratch;
  std::size_t m_discarded = 0;
  std::size_t m_throttled_kept = 0;
  std::size_t m_next_check = 0;
  double m_last_noise = 0;
  double m_elapsed_ms = 0;
  bool m_converged = false;
  std::string m_reason;
};

}  // namespace kernelscan

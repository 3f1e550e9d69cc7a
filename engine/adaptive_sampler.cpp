#include "engine/adaptive_sampler.hpp"

#include <algorithm>
#include <cmath>

namespace kernelscan {

adaptive_sampler::adaptive_sampler(const timing_options& options)
    : m_options(options),
      m_next_check(std::max(k_ci95_min_samples, std::size_t(std::max(0, options.min_samples)))) {
  m_samples.reserve(std::size_t(std::min(options.max_samples, 4096)));
}

void adaptive_sampler::add(double time_us, bool throttled, bool invalid) {
  if (invalid || (throttled && m_discarded < m_samples.size() +
                                                 std::size_t(std::max(0, m_options.min_samples)))) {
    ++m_discarded;
    return;
  }
  if (throttled) ++m_throttled_kept;
  m_samples.push_back(time_us);
}

bool adaptive_sampler::should_stop(double elapsed_ms) {
  m_elapsed_ms = elapsed_ms;
  const std::size_t n = m_samples.size();
  const bool enough =
      n >= std::size_t(m_options.min_samples) && elapsed_ms >= m_options.min_time_ms;
  const bool at_max_samples = n >= std::size_t(m_options.max_samples);
  const bool at_max_time = elapsed_ms >= m_options.max_time_ms;
  // The noise estimate costs O(n): it is computed only once the rule could stop (enough samples
  // and time), and then on a geometric schedule, which keeps a long measurement at O(n log n)
  // overall while stopping within ~6% of the first sample count that converges. Below
  // k_ci95_min_samples the median has no 95% interval, so nothing has converged.
  if (n >= k_ci95_min_samples && (at_max_samples || at_max_time || (enough && n >= m_next_check))) {
    m_scratch.assign(m_samples.begin(), m_samples.end());
    m_last_noise = relative_noise(m_scratch);
    m_next_check = n + std::max<std::size_t>(1, n / 16);
    if (enough && m_last_noise <= m_options.target_rel_noise) {
      m_converged = true;
      m_reason = "noise_target";
      return true;
    }
  }
  if (at_max_samples) {
    m_reason = "max_samples";
    return true;
  }
  if (at_max_time) {
    m_reason = "max_time";
    return true;
  }
  return false;
}

sampling_result adaptive_sampler::finish() {
  sampling_result r;
  r.discarded = m_discarded;
  r.throttled_kept = m_throttled_kept;
  r.converged = m_converged;
  r.elapsed_ms = m_elapsed_ms;
  r.stop_reason = m_reason;
  if (!m_samples.empty()) r.summary = summarize(m_samples);
  r.samples_us = std::move(m_samples);
  return r;
}

}  // namespace kernelscan

#include "engine/fitness.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "engine/statistics.hpp"

namespace kernelscan {

bool voids_score(std::string_view flag) {
  static constexpr std::array<std::string_view, 11> k_voiding{
      "faster_than_roofline", "timed_output_mismatch", "output_not_written",
      "verification_failed",  "precision_mismatch",    "timeout",
      "device_fault",         "input_modified",        "out_of_bounds_write",
      "low_signal_reference", "uneven_launches"};
  return std::find(k_voiding.begin(), k_voiding.end(), flag) != k_voiding.end();
}

speedup_estimate paired_speedup(std::span<const double> candidate_us,
                                std::span<const double> baseline_us) {
  const std::size_t n = std::min(candidate_us.size(), baseline_us.size());
  std::vector<double> ratios;
  ratios.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (candidate_us[i] > 0) ratios.push_back(baseline_us[i] / candidate_us[i]);
  }
  speedup_estimate e;
  if (ratios.empty()) return e;
  std::sort(ratios.begin(), ratios.end());
  e.speedup = percentile_sorted(ratios, 50);
  if (ratios.size() >= k_ci95_min_samples) {
    const auto [lo, hi] = median_ci_ranks(ratios.size());
    e.ci95_low = ratios[lo];
    e.ci95_high = ratios[hi];
  }
  std::vector<double> base(baseline_us.begin(), baseline_us.begin() + std::ptrdiff_t(n));
  std::sort(base.begin(), base.end());
  e.baseline_us = percentile_sorted(base, 50);
  return e;
}

bool any_voids_score(const std::vector<std::string>& flags) {
  return std::any_of(flags.begin(), flags.end(),
                     [](const std::string& f) { return voids_score(f); });
}

std::vector<std::string> voiding_flags(std::vector<std::string> flags) {
  std::erase_if(flags, [](const std::string& f) { return !voids_score(f); });
  return flags;
}

point_fitness score_point(const point_result& r, const fitness_options& options,
                          const std::optional<speedup_estimate>& speedup) {
  point_fitness f;
  const bool voided = any_voids_score(r.flags);
  // A point whose outputs were not checked is not known to be correct, however fast it is.
  f.correct =
      r.status == point_status::ok && r.time_us && r.verification.status == "passed" && !voided;
  if (speedup && speedup->speedup > 0) {
    f.speedup = speedup->speedup;
    if (speedup->ci95_low && speedup->ci95_high) {
      f.speedup_ci95 = std::pair{*speedup->ci95_low, *speedup->ci95_high};
    }
    f.baseline_us = speedup->baseline_us;
  }
  // Not capped at 1: beating the target by more still scores more, so an optimising loop keeps
  // a gradient past the target.
  if (options.target_us && r.time_us && r.time_us->median > 0) {
    f.latency_score = *options.target_us / r.time_us->median;
  }
  if (!f.correct) {
    f.combined_score = 0;
    return f;
  } else if (options.target_us) {
    const double w = options.correctness_weight;
    f.combined_score = w + (1 - w) * f.latency_score.value_or(0);
  } else if (options.baseline || speedup) {
    // A fitness baseline, or with variants the baseline variant (the runner gives a speedup
    // only then).
    f.combined_score = f.speedup.value_or(0);
  } else {
    f.combined_score = 1;
  }
  f.combined_score = std::min(f.combined_score, options.score_cap);
  return f;
}

job_fitness summarize_fitness(std::span<const scored_point> points, std::uint64_t total_points,
                              bool succeeded, std::vector<std::string> flags,
                              const score_rules& rules) {
  job_fitness j;
  j.points = total_points;
  j.flags = std::move(flags);
  double log_speedup = 0, latency = 0, log_combined = 0;
  std::size_t n_speedup = 0, n_latency = 0, n_correct = 0, n_scored = 0;
  for (const auto& p : points) {
    if (p.simulated) j.simulated = true;
    if (p.ok) ++j.ok_points;
    if (p.correct) ++n_correct;
    if (p.combined_score > 0) {
      log_combined += std::log(p.combined_score);
      ++n_scored;
    }
    if (p.speedup && *p.speedup > 0) {
      log_speedup += std::log(*p.speedup);
      ++n_speedup;
    }
    if (p.latency_score) {
      latency += *p.latency_score;
      ++n_latency;
    }
  }
  if (n_speedup) j.speedup = std::exp(log_speedup / double(n_speedup));
  if (n_latency) j.latency_score = latency / double(n_latency);
  j.correct_points = n_correct;
  j.correct = succeeded && total_points > 0 && n_correct == total_points;
  // A geometric mean over every point of the sweep: a point that scored 0 (failed, wrong, never
  // measured) makes it 0, so failing the sizes it is slow at cannot raise a candidate's score.
  if (succeeded && total_points > 0 && n_scored == total_points) {
    j.combined_score = std::exp(log_combined / double(total_points));
  }
  const bool excessive =
      std::find(j.flags.begin(), j.flags.end(), "excessive_speedup") != j.flags.end();
  if (excessive && rules.withhold_excessive && !rules.confirmed && j.combined_score > 0) {
    j.withheld = true;
    j.combined_score = 0;
  }
  j.confirmed = rules.confirmed;
  return j;
}

}  // namespace kernelscan

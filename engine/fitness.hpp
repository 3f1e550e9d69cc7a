#pragma once
// The fitness score kernel-optimising agents read (DESIGN.md §4; the rule is in the README under
// "Fitness" and in openapi.yaml). Per point:
//   correct        the point measured, verification ran and passed, and no flag voids it (a
//                  point whose outputs were not checked is never correct);
//   speedup        baseline median / candidate median from interleaved A/B samples, with a 95% CI;
//   latency_score  target_us / median_us when a target is given: 1 at the target, above 1
//                  faster than it, never capped;
//   combined_score 0 unless correct; else w·1 + (1 − w)·latency_score with a target, else the
//                  speedup with a baseline, else 1.
// Each point's combined score is capped at fitness.score_cap.
// Per job: the geometric mean of the combined scores over every point of the sweep; a point that
// scored 0 (failed, wrong, never measured) makes it 0, so a candidate cannot raise its score by
// failing the sizes it is slow at. A job with an excessive_speedup point has its score withheld
// (0, `withheld`) until an operator confirms it, where the daemon withholds such scores.
// Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/job_spec.hpp"
#include "engine/point_result.hpp"

namespace kernelscan {

// Flags that void a point's score; any other flag (excessive_speedup) is a warning.
bool voids_score(std::string_view flag);
// Some flag of `flags` voids the score: the point is not correct, and never a job's best.
bool any_voids_score(const std::vector<std::string>& flags);
// The flags of `flags` that void the score, in their order.
std::vector<std::string> voiding_flags(std::vector<std::string> flags);

struct speedup_estimate {
  double speedup = 0;
  // None with fewer than k_ci95_min_samples pairs, too few for a 95% interval.
  std::optional<double> ci95_low, ci95_high;
  double baseline_us = 0;  // the baseline's median
};

// From samples taken in pairs (candidate i right after baseline i, or the reverse), so that drift
// cancels: the median of the per-pair ratios baseline/candidate with its order-statistic 95% CI.
// Precondition: equal, non-zero sizes.
speedup_estimate paired_speedup(std::span<const double> candidate_us,
                                std::span<const double> baseline_us);

// Scores a finished point from its status, verification, flags and time.
point_fitness score_point(const point_result& r, const fitness_options& options,
                          const std::optional<speedup_estimate>& speedup);

// What the job summary needs of each stored point.
struct scored_point {
  bool ok = false;
  bool correct = false;
  double combined_score = 0;
  std::optional<double> speedup;
  std::optional<double> latency_score;
  bool simulated = false;   // measured by the mock engine
  std::uint64_t index = 0;  // the point's index in the sweep
  std::vector<std::string> flags{};
};

struct job_fitness {
  bool correct = false;  // every point of the job correct
  std::uint64_t points = 0;
  std::uint64_t ok_points = 0;
  std::uint64_t correct_points = 0;
  std::optional<double> speedup;        // geometric mean over points with one
  std::optional<double> latency_score;  // mean over points with one
  double combined_score = 0;            // geometric mean over all `total_points`; 0 if any is
  bool withheld = false;   // an excessive_speedup awaits an operator's confirmation: score 0
  bool confirmed = false;  // an operator confirmed the job's speedups
  std::vector<std::string> flags;  // every flag any point raised
  bool simulated = false;          // some point's times come from the mock engine's model
};

// How the daemon treats a job's excessive speedups.
struct score_rules {
  bool withhold_excessive = true;  // withhold the score of a job with excessive_speedup
  bool confirmed = false;          // an operator confirmed this job's speedups
};

// `total_points`: the job's sweep size (points never measured count 0). A job that did not
// succeed scores 0.
job_fitness summarize_fitness(std::span<const scored_point> points, std::uint64_t total_points,
                              bool succeeded, std::vector<std::string> flags,
                              const score_rules& rules = {});

}  // namespace kernelscan

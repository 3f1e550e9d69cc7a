#pragma once
// Summary statistics of timing samples (DESIGN.md §3). Units are whatever the samples are in;
// the engines use microseconds. Pure functions; thread-safe.

#include <cstddef>
#include <optional>
#include <span>
#include <utility>

namespace kernelscan {

// The fewest samples whose order statistics give the median a 95% confidence interval: the
// widest one, the samples' range, holds the median with probability 1 - 2^(1-n), 94% at 5
// samples and 97% at 6. With fewer there is no 95% interval to give.
inline constexpr std::size_t k_ci95_min_samples = 6;

struct time_summary {
  std::size_t count = 0;
  double mean = 0, median = 0, min = 0, max = 0, stddev = 0;
  double p5 = 0, p95 = 0, p99 = 0;
  // Distribution-free 95% confidence interval of the median, from order statistics; none with
  // fewer than k_ci95_min_samples samples.
  std::optional<double> ci95_low, ci95_high;
  // Relative standard error of the median, estimated from the CI: (high - low) / (2 * 1.96 *
  // median), 0 for a median <= 0; none without the CI. The adaptive stopping rule compares it
  // with target_rel_noise.
  std::optional<double> rel_noise;
};

// Precondition: !samples.empty(). Copies and sorts: O(n log n).
time_summary summarize(std::span<const double> samples);

// Percentile p in [0, 100] of sorted data, interpolating linearly between closest ranks
// (Hyndman–Fan type 7, as numpy's default).
double percentile_sorted(std::span<const double> sorted, double p);

// 0-based ranks (lo, hi) of the order statistics bounding a confidence interval of the median
// for n samples: the narrowest symmetric pair with binomial coverage >= `confidence`, or
// (0, n-1) when n is too small to reach it. Precondition: n >= 1.
std::pair<std::size_t, std::size_t> median_ci_ranks(std::size_t n, double confidence = 0.95);

// The relative noise of the median of unsorted samples in O(n) (selection, not sorting); the
// value summarize() would report, and infinity where it reports none (too few samples for a 95%
// interval), which no noise target is met by. Reorders `scratch`, which must hold a copy of the
// samples.
double relative_noise(std::span<double> scratch);

}  // namespace kernelscan

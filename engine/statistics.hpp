#pragma once
// Summary statistics of timing samples (DESIGN.md §3). Units are whatever the samples are in;
// the engines use microseconds. Pure functions; thread-safe.

#include <cstddef>
#include <span>
#include <utility>

namespace kernelscan {

struct time_summary {
  std::size_t count = 0;
  double mean = 0, median = 0, min = 0, max = 0, stddev = 0;
  double p5 = 0, p95 = 0, p99 = 0;
  // Distribution-free 95% confidence interval of the median, from order statistics.
  double ci95_low = 0, ci95_high = 0;
  // Relative standard error of the median, estimated from the CI: (high - low) / (2 * 1.96 *
  // median); 0 where undefined (fewer than 2 samples, median <= 0). The adaptive stopping rule
  // compares it with target_rel_noise, and only once it has 2 samples or more.
  double rel_noise = 0;
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
// value summarize() would report. Reorders `scratch`, which must hold a copy of the samples.
double relative_noise(std::span<double> scratch);

}  // namespace kernelscan

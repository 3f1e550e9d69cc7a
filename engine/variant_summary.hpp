#pragma once
// The summary of a job with variants (job_spec::variants), written when it ends: for each variant
// how many points it measured, at how many it was the fastest, and the geometric mean of its
// speedups over the baseline variant (or, without one, over the slowest variant of each point);
// and the best variant overall, the one with the highest such mean. A row whose flags void its
// score (a wrong answer, for one) wins no point, and a variant with such a row is never the best.
// Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kernelscan {

// What the summary needs of one stored row.
struct variant_row {
  std::uint64_t point = 0;
  std::string variant;
  bool ok = false;
  std::optional<double> median_us;
  std::optional<double> over_baseline;  // the row's speedup over the baseline variant
  std::optional<double> over_slowest;   // ... over the slowest variant of its point
  bool voided = false;                  // a flag voids its score (fitness.hpp, voids_score)
};

struct variant_totals {
  std::string name;
  std::uint64_t ok_points = 0;
  // Points where it was the fastest of the variants that measured without a voided score.
  std::uint64_t wins = 0;
  std::optional<double> geomean_speedup;
  std::uint64_t voided_points = 0;  // points whose flags void its score
};

struct variant_summary {
  std::optional<std::string> baseline;   // the baseline variant, if the job names one
  bool over_baseline = false;            // the speedups are over it (else over the slowest)
  std::uint64_t points = 0;              // points with at least one variant measured
  std::vector<variant_totals> variants;  // in the spec's order
  // The highest geometric-mean speedup of the variants with no voided point.
  std::optional<std::string> best;
};

// `names`: the variants in the spec's order.
variant_summary summarize_variants(std::span<const variant_row> rows,
                                   const std::vector<std::string>& names,
                                   const std::optional<std::string>& baseline);

}  // namespace kernelscan

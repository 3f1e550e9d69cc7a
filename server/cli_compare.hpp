#pragma once
// The text report of `kernelscan compare`: several jobs, or the variants of one job, joined on
// the sweep parameters they share, with each one's median and its speedup over a baseline at
// every shared point (the command-line twin of the dashboard's compare view). Pure formatting of
// the API's JSON, tested without a daemon.
//
// A point is faster or slower than the baseline's only when the two medians' 95% intervals do not
// overlap; otherwise it is the same. Two variants of one job, where one was measured against the
// other (the job's baseline, or the point's slowest), are compared as the daemon compared them:
// the median of the paired ratios of their interleaved samples, faster or slower where that
// ratio's 95% interval leaves out 1. Where a series has parameters the others lack, its best
// point per shared key stands for it: the one of the highest throughput (least time per FLOP,
// else per byte, else the fastest), not simply the smallest problem. Where the jobs run different
// ops or a shared parameter sets different fields in them, or they share no parameter at all
// (each one's best point against the other's), the report says so above the table.

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/json.hpp"

namespace kernelscan {

// One thing compared: a job, or one variant of a job, and its result rows.
struct compare_series {
  std::string label;  // "job 12", or the variant's name
  json rows = json::array();
  json spec;  // the job's spec (for a job), to tell what its parameters set; null for a variant
};

// The series share no measured point: nothing was wrong with the command, but there is nothing
// to print.
class nothing_to_compare : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The series of the command: each job's rows when there are two or more jobs; the variants of
// the one job when there is one (std::invalid_argument when it has none). `jobs[i]` pairs a Job
// with its rows.
std::vector<compare_series> series_of(const std::vector<std::pair<json, json>>& jobs);

// The report, with `base` (a series' label, or "" for the first) as the baseline. Throws
// std::invalid_argument naming `base` when no series has that label, nothing_to_compare when the
// series share no point.
//
// With `max_slowdown` (a fraction: 0.03 for 3%), `regressions` receives, a line each, what a
// performance gate fails on: a point slower than the baseline's beyond both intervals by more
// than that, a geometric mean of the speedups below 1 - max_slowdown, a point whose flags void
// its score where the baseline's are sound, and a point that failed where the baseline's was
// measured ("job 6 at N=256: 0.91x slower").
std::string compare_report(const std::vector<compare_series>& series, const std::string& base,
                           std::optional<double> max_slowdown = std::nullopt,
                           std::vector<std::string>* regressions = nullptr);

}  // namespace kernelscan

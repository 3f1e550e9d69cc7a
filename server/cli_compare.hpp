#pragma once
// The text report of `kernelscan compare`: several jobs, or the variants of one job, joined on
// the sweep parameters they share, with each one's median and its speedup over a baseline at
// every shared point (the command-line twin of the dashboard's compare view). Pure formatting of
// the API's JSON, tested without a daemon.
//
// A point is faster or slower than the baseline's only when the two medians' 95% intervals do not
// overlap; otherwise it is the same. Where a series has parameters the others lack, its best
// (fastest) point per shared key stands for it.

#include <stdexcept>
#include <string>
#include <vector>

#include "api/json.hpp"

namespace kernelscan {

// One thing compared: a job, or one variant of a job, and its result rows.
struct compare_series {
  std::string label;  // "job 12", or the variant's name
  json rows = json::array();
};

// The series of the command: each job's rows when there are two or more jobs; the variants of
// the one job when there is one (std::invalid_argument when it has none). `jobs[i]` pairs a Job
// with its rows.
std::vector<compare_series> series_of(const std::vector<std::pair<json, json>>& jobs);

// The report, with `base` (a series' label, or "" for the first) as the baseline. Throws
// std::invalid_argument naming `base` when no series has that label, or when the series share no
// point.
std::string compare_report(const std::vector<compare_series>& series, const std::string& base);

}  // namespace kernelscan

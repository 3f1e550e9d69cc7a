#pragma once
// The text report of a job's results that `kernelscan results` and `kernelscan submit --wait`
// print: pure formatting of the API's JSON, so it is tested without a daemon.
//
// Units: times arrive in µs (`time_us`) and are shown in µs, or in ms when the slowest median
// of the job is 100 ms or more; throughput in TFLOP/s and GB/s as the API gives it.

#include <string>

#include "api/json.hpp"

namespace kernelscan {

// `job` is a Job as GET /api/v1/jobs/{id} returns it (with `spec`, whose sweep gives the
// parameter order; without it the first row's order is used). `rows` is the array of
// PointResult objects, in index order. Returns the report, lines ended by '\n':
//
// - a header: job id, name, status (and error), kernel op, device, points measured;
// - one table of points. With one sweep parameter, one row per value; with two or more, one
//   section per combination of all but the last parameter, rows by the last. Columns: the
//   parameter, status, median time ± half the width of its 95% confidence interval, TFLOP/s,
//   GB/s, percent of the roofline, bound, and speedup against the slowest ok point of the job.
//   A failed point shows its error instead of numbers. An import (op "import") shows each
//   kernel's share of the GPU time instead of a speedup, "-" for what its source did not give,
//   and the kernel's name after the columns.
// - a footer naming the best (fastest ok) point.
//
// An ok point whose answers failed verification is counted as such on the points line; ok points
// that were not verified (no reference to compare with) get a note saying so, once. An error of
// many lines (a compiler's log) shows its first line where it occurs and the rest once, beneath
// the table, naming the points it came from; `source_name`, where given, replaces the name the
// engine gives the source in such logs (kernel.cl, kernel.cu, kernel.hip).
std::string results_report(const json& job, const json& rows, const std::string& source_name = "");

// The job's score, as the report's `score` line says it: its combined score (or why it is
// withheld), then how many points were correct, the speedup, the latency score and the flags;
// "" for a job that did not ask to be scored (no fitness baseline or target, not a task's
// candidate) or has no fitness summary.
std::string score_text(const json& job);

// An ok point whose answers are wrong: its verification failed, or a checked timed sample's
// outputs (or unwritten elements) said so.
bool failed_verification(const json& row);

}  // namespace kernelscan

#pragma once
// A job as the queue and the API see it: its state, progress and timestamps, with its spec kept
// as the canonical JSON text it was accepted as. Plain value.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/job_spec.hpp"
#include "engine/point_result.hpp"

namespace kernelscan {

// queued -> running -> succeeded | failed | cancelled; running -> queued on a daemon restart.
enum class job_status { queued, running, succeeded, failed, cancelled };
std::string_view to_string(job_status s);

// Now, as job timestamps are kept: Unix epoch milliseconds.
std::int64_t unix_time_ms();
std::optional<job_status> parse_job_status(std::string_view s);
inline bool is_terminal(job_status s) {
  return s == job_status::succeeded || s == job_status::failed || s == job_status::cancelled;
}

struct job_progress {
  std::uint64_t total = 0;
  std::uint64_t done = 0;  // points with a stored result, ok or failed
  std::uint64_t ok = 0;
  std::uint64_t failed = 0;
};

// The ok point that did its work fastest so far: the lowest median per FLOP (else per byte, else
// per launch), as cost_of() ranks rows.
struct job_best {
  std::uint64_t index = 0;
  double median_us = 0;
  std::string params_json;  // the point's sweep parameters, a JSON object
  bool held_out = false;    // shown without params and time: a task's held-out point
};

struct job_record {
  std::int64_t id = 0;
  std::string name;
  std::map<std::string, std::string> labels;
  job_status status = job_status::queued;
  int priority = 0;
  engine_kind engine = engine_kind::any;
  std::optional<int> requested_device;  // placement (job_spec::device ...); all empty: any
  std::optional<std::string> requested_node;
  std::optional<std::string> requested_model;
  std::optional<int> device;  // where it runs or ran: its index on `node`
  std::string node;           // the node that runs or ran it; empty: none yet
  std::string op;             // gemm, stream, custom
  job_progress progress;
  std::int64_t created_ms = 0;  // Unix epoch milliseconds
  std::optional<std::int64_t> started_ms;
  std::optional<std::int64_t> finished_ms;
  std::optional<point_error> error;  // why the job failed or was cancelled
  bool cancel_requested = false;
  std::string spec_json;  // canonical spec; empty in list views
  std::optional<job_best> best;
  std::string fitness_json;   // the fitness summary once the job ended; else empty
  std::string variants_json;  // a job with variants: the summary of them once it ended; else empty
  std::optional<std::int64_t> cached_from;  // the job whose stored results answered this one
  std::optional<std::string> task;          // the evaluation task it was submitted against
};

}  // namespace kernelscan

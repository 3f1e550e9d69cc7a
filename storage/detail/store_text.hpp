#pragma once
// Text encodings both stores use for what they keep in plain columns, so that the two write and
// read the same values.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/job_spec.hpp"
#include "storage/job_store.hpp"

namespace kernelscan::detail {

// Labels ride in the job row for reading (a table of labels holds them for filtering), encoded
// as length-prefixed strings ("3:key5:value...") so that any bytes survive without a JSON
// library.
std::string encode_labels(const std::map<std::string, std::string>& labels);
std::map<std::string, std::string> decode_labels(std::string_view text);

// A job's engine as stored (to_string(engine_kind)); an unknown name reads as `any`.
engine_kind parse_engine(std::string_view s);

// A row's flags, comma-separated (flag names are identifiers), and back.
std::string join_flags(const std::vector<std::string>& flags);
std::vector<std::string> split_flags(std::string_view text);

// The text a row copied from the result cache is read as: the measured row with
// "cache":{"hit":true,"job_id":N} as its last member.
std::string with_cache_hit(std::string_view result_json, std::int64_t origin_job);

// The count of jobs a store deleted since the process started, as GET /metrics shows it.
store_metric deleted_jobs_metric(std::uint64_t deleted);

// The jobs table's columns as both stores select them; read_row() reads them by position and a
// query may add columns after them (k_column_count).
inline const std::string k_columns =
    "id, name, status, priority, engine, requested_device, device, op, total_points, "
    "done_points, ok_points, failed_points, best_index, best_median_us, created_ms, started_ms, "
    "finished_ms, error_type, error_message, cancel_requested, best_params, labels, fitness, "
    "cached_from, node, place_node, place_model, variants_summary, task";
inline constexpr int k_column_count = 29;

inline std::optional<int> opt_int(const std::optional<std::int64_t>& v) {
  if (!v) return std::nullopt;
  return int(*v);
}

}  // namespace kernelscan::detail

#pragma once
// A job on the wire (api/openapi.yaml `Job`).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/json.hpp"
#include "engine/fitness.hpp"
#include "engine/job.hpp"
#include "engine/variant_summary.hpp"

namespace kernelscan {

// RFC 3339 UTC with milliseconds: "2026-11-21T21:07:00.123Z".
std::string format_time_ms(std::int64_t unix_ms);
// The inverse: exactly "YYYY-MM-DDTHH:MM:SS.mmmZ" as format_time_ms writes it, else nullopt.
std::optional<std::int64_t> parse_time_ms(std::string_view text);

// `spec_json`, when the record carries it, is embedded as the "spec" object.
json to_json(const job_record& job);
// The same as to_json(job).dump(), with the stored spec text spliced in as it is rather than
// parsed and written again (the spec can be the largest part of a job, and GET job is hot).
std::string job_json_text(const job_record& job);

// A job's fitness summary (api/openapi.yaml `JobFitness`).
std::string fitness_json_text(const job_fitness& f);
// The fitness summary a job stores when it ends (summarize_fitness over its scored points, with
// every flag they raised), and for a job with held-out points (`public_points`: how many are
// public) its "public" part: the same over the public points alone, their flags only, which is
// what a candidate sees of a task whose held-out scores are private.
std::string job_fitness_text(std::span<const scored_point> points, std::uint64_t total_points,
                             bool succeeded, const score_rules& rules,
                             std::optional<std::uint64_t> public_points);
// The summary of a job's variants (api/openapi.yaml `VariantsSummary`).
std::string variants_json_text(const variant_summary& s);

}  // namespace kernelscan

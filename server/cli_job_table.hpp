#pragma once
// How the command-line client shows jobs: the `kernelscan jobs` table and the line
// `kernelscan submit` prints for a new job. Pure formatting of the API's Job JSON.
//
// Times: `now_ms` is Unix time in milliseconds, passed in so ages are testable.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/json.hpp"

namespace kernelscan {

// One line per job (newest first, as listed): id, status, progress done/total, device, name,
// labels, age ("3m ago"); where a job was submitted to an evaluation task, a score column after
// progress (its combined score, "withheld" until confirmed). An empty array gives "no jobs\n".
std::string job_table(const json& jobs, std::int64_t now_ms);

// "job 17 queued: \"f16 gemm\", gemm, 12 points, device any, priority 0".
std::string job_summary_line(const json& job);

// "12s ago", "3m ago", "5h ago", "2d ago"; a time in the future (clock skew) is "0s ago".
std::string format_age(std::int64_t age_ms);

// The API's timestamps ("2025-01-31T12:00:00.123Z", UTC) as Unix milliseconds; nullopt when
// `text` is not in that form.
std::optional<std::int64_t> parse_timestamp_ms(std::string_view text);

}  // namespace kernelscan

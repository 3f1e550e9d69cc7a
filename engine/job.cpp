#include "engine/job.hpp"

#include <array>
#include <chrono>

namespace kernelscan {
namespace {

constexpr std::array<std::pair<job_status, std::string_view>, 5> k_names{{
    {job_status::queued, "queued"},
    {job_status::running, "running"},
    {job_status::succeeded, "succeeded"},
    {job_status::failed, "failed"},
    {job_status::cancelled, "cancelled"},
}};

}  // namespace

std::int64_t unix_time_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string_view to_string(job_status s) {
  for (const auto& [v, n] : k_names) {
    if (v == s) return n;
  }
  return "?";
}

std::optional<job_status> parse_job_status(std::string_view s) {
  for (const auto& [v, n] : k_names) {
    if (n == s) return v;
  }
  return std::nullopt;
}

}  // namespace kernelscan

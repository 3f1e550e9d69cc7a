#include "engine/job.hpp"

#include <array>

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

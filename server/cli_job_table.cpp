#include "server/cli_job_table.hpp"

#include <cctype>
#include <vector>

#include "api/job_codec.hpp"
#include "server/detail/text_table.hpp"

namespace kernelscan {
namespace {

using detail::one_line;

// Long names and label lists are cut so a row stays on one terminal line.
constexpr std::size_t k_max_name = 32;
constexpr std::size_t k_max_labels = 40;

std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump();
}

std::string field(const json& job, const char* ptr) {
  const json::json_pointer p{ptr};
  return job.is_object() && job.contains(p) ? text_of(job[p]) : "-";
}

}  // namespace

std::string format_age(std::int64_t age_ms) {
  const std::int64_t s = age_ms < 0 ? 0 : age_ms / 1000;
  if (s < 60) return std::to_string(s) + "s ago";
  if (s < 3600) return std::to_string(s / 60) + "m ago";
  if (s < 48 * 3600) return std::to_string(s / 3600) + "h ago";
  return std::to_string(s / 86400) + "d ago";
}

std::optional<std::int64_t> parse_timestamp_ms(std::string_view t) {
  return parse_time_ms(t);
}

std::string job_table(const json& jobs, std::int64_t now_ms) {
  if (!jobs.is_array() || jobs.empty()) return "no jobs\n";
  using col = detail::text_table::column;
  constexpr auto right = detail::text_table::align::right;
  constexpr auto left = detail::text_table::align::left;
  detail::text_table table({col{"id", right}, col{"status", left}, col{"progress", right},
                            col{"device", right}, col{"name", left}, col{"labels", left},
                            col{"age", left}});
  for (const auto& job : jobs) {
    std::string progress = field(job, "/progress/done") + "/" + field(job, "/progress/total");
    std::string labels;
    if (job.contains("labels") && job["labels"].is_object()) {
      for (const auto& [k, v] : job["labels"].items())
        labels += (labels.empty() ? "" : ",") + k + "=" + text_of(v);
    }
    const auto created = parse_timestamp_ms(job.value("created_at", ""));
    table.add_row({field(job, "/id"), field(job, "/status"), progress, field(job, "/device"),
                   one_line(job.value("name", ""), k_max_name), one_line(labels, k_max_labels),
                   created ? format_age(now_ms - *created) : "-"});
  }
  return table.render();
}

std::string job_summary_line(const json& job) {
  std::string out = "job " + field(job, "/id") + " " + field(job, "/status") + ":";
  const std::string name = job.value("name", "");
  if (!name.empty()) out += " \"" + one_line(name, 60) + "\",";
  const std::string total = field(job, "/progress/total");
  out += " " + field(job, "/op") + ", " + total + (total == "1" ? " point" : " points") +
         ", device " + field(job, "/requested_device") + ", priority " + field(job, "/priority");
  return out;
}

}  // namespace kernelscan

#include "server/cli_job_table.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

#include "api/job_codec.hpp"
#include "api/json.hpp"
#include "server/detail/text_table.hpp"

namespace kernelscan {
namespace {

using detail::one_line;

// Long names and label lists are cut so a row stays on one terminal line.
constexpr std::size_t k_max_name = 32;
constexpr std::size_t k_max_labels = 40;

std::string field(const json& job, const char* ptr) {
  const json::json_pointer p{ptr};
  return job.is_object() && job.contains(p) ? text_of(job[p]) : "-";
}

// A job's score as a task's list shows it: the combined score, "withheld" until an operator
// confirms it, "-" while the job has none.
std::string score_of(const json& job) {
  const json::json_pointer fitness{"/summary/fitness"};
  if (!job.contains(fitness) || !job[fitness].is_object()) return "-";
  const json& f = job[fitness];
  if (f.value("withheld", false)) return "withheld";
  const auto score = f.find("combined_score");
  return score != f.end() && score->is_number()
             ? detail::format_significant(score->get<double>(), 3)
             : "-";
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
  // Jobs submitted to an evaluation task are there for their score.
  const bool scored = std::any_of(jobs.begin(), jobs.end(), [](const json& j) {
    return j.is_object() && j.contains("task") && j["task"].is_string();
  });
  std::vector<col> columns{col{"id", right},     col{"status", left}, col{"progress", right},
                           col{"device", right}, col{"name", left},   col{"labels", left},
                           col{"age", left}};
  if (scored) columns.insert(columns.begin() + 3, col{"score", right});
  detail::text_table table(std::move(columns));
  for (const auto& job : jobs) {
    std::string progress = field(job, "/progress/done") + "/" + field(job, "/progress/total");
    std::string labels;
    if (job.contains("labels") && job["labels"].is_object()) {
      for (const auto& [k, v] : job["labels"].items())
        labels += (labels.empty() ? "" : ",") + k + "=" + text_of(v);
    }
    const auto created = parse_timestamp_ms(job.value("created_at", ""));
    std::vector<std::string> cells{field(job, "/id"),
                                   field(job, "/status"),
                                   progress,
                                   field(job, "/device"),
                                   one_line(job.value("name", ""), k_max_name),
                                   one_line(labels, k_max_labels),
                                   created ? format_age(now_ms - *created) : "-"};
    if (scored) cells.insert(cells.begin() + 3, score_of(job));
    table.add_row(std::move(cells));
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

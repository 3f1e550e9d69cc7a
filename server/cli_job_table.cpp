#include "server/cli_job_table.hpp"

#include <cctype>
#include <vector>

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
  // Exactly "YYYY-MM-DDTHH:MM:SS.mmmZ", as the daemon writes them.
  constexpr std::string_view shape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (t.size() != shape.size()) return std::nullopt;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const bool digit = std::isdigit(static_cast<unsigned char>(t[i])) != 0;
    if (shape[i] == 'd' ? !digit : t[i] != shape[i]) return std::nullopt;
  }
  auto num = [&](std::size_t at, std::size_t n) {
    std::int64_t v = 0;
    for (std::size_t i = at; i < at + n; ++i)
      v = v * 10 + (t[i] - '0');
    return v;
  };
  const std::int64_t y0 = num(0, 4), m = num(5, 2), d = num(8, 2);
  if (m < 1 || m > 12 || d < 1 || d > 31) return std::nullopt;
  // Days since the epoch from a civil date (H. Hinnant's algorithm, the inverse of the one the
  // daemon formats with).
  const std::int64_t y = y0 - (m <= 2);
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const std::int64_t days = era * 146097 + doe - 719468;
  return ((days * 24 + num(11, 2)) * 60 + num(14, 2)) * 60000 + num(17, 2) * 1000 + num(20, 3);
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

#include "server/cli_report.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iterator>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "api/result_codec.hpp"
#include "engine/fitness.hpp"
#include "engine/text_list.hpp"
#include "engine/variant_summary.hpp"
#include "server/detail/text_table.hpp"

namespace kernelscan {
namespace {

using detail::counted;
using detail::format_significant;
using detail::one_line;
using detail::text_table;

// Significant digits: 4 for measured values (the mock's noise and a real GPU's run-to-run
// spread are both well above 0.01%), 2 for the confidence interval's half-width.
constexpr int k_digits = 4;
constexpr int k_ci_digits = 2;

std::string string_at(const json& j, const char* ptr, std::string fallback = "") {
  const json::json_pointer p{ptr};
  if (!j.is_object() || !j.contains(p) || !j[p].is_string()) return fallback;
  return j[p].get<std::string>();
}

std::vector<std::string> parameter_names(const json& job, const json& rows) {
  std::vector<std::string> names;
  const json::json_pointer sweep{"/spec/sweep"};
  if (job.is_object() && job.contains(sweep) && job[sweep].is_object()) {
    for (const auto& [name, values] : job[sweep].items())
      names.push_back(name);
  } else if (!rows.empty() && rows.front().contains("params")) {
    for (const auto& [name, value] : rows.front()["params"].items())
      names.push_back(name);
  }
  return names;
}

std::string param_value(const json& row, const std::string& name) {
  const json::json_pointer p{"/params"};
  if (!row.contains(p) || !row[p].contains(name)) return "-";
  return text_of(row[p][name]);
}

// "M=1024, N=2048" over names[first, last).
std::string assignment(const json& row, const std::vector<std::string>& names, std::size_t first,
                       std::size_t last) {
  std::string out;
  for (std::size_t i = first; i < last; ++i)
    out += (out.empty() ? "" : ", ") + names[i] + "=" + param_value(row, names[i]);
  return out;
}

// An imported point's kernel name, cut to fit a line; "" for a measured point.
std::string kernel_name(const json& row, std::size_t max_width = 60) {
  return one_line(string_at(row, "/name"), max_width);
}

std::string point_name(const json& row, const std::vector<std::string>& names) {
  std::string out = names.empty() ? "point " + text_of(row.value("index", json()))
                                  : assignment(row, names, 0, names.size());
  if (const std::string name = kernel_name(row); !name.empty()) out += " (" + name + ")";
  return out;
}

std::string kernel_line(const json& job) {
  const json::json_pointer vp{"/spec/variants"};
  if (job.contains(vp) && job[vp].is_array()) {
    std::string names;
    for (const auto& v : job[vp])
      names += (names.empty() ? "" : ", ") + string_at(v, "/name", "?");
    std::string baseline = string_at(job, "/spec/baseline");
    return std::to_string(job[vp].size()) + " variants: " + one_line(names, 200) +
           (baseline.empty() ? "" : "; baseline " + baseline);
  }
  std::string op = job.value("op", "?");
  const json::json_pointer kp{"/spec/kernel"};
  if (!job.contains(kp) || !job[kp].is_object()) return op;
  const json& k = job[kp];
  auto field = [&](const char* name) { return k.contains(name) ? text_of(k[name]) : "?"; };
  if (op == "gemm") {
    return "gemm " + field("dtype") + ", m=" + field("m") + " n=" + field("n") +
           " k=" + field("k") + " (" + field("layout_a") + " x " + field("layout_b") + ", " +
           field("impl") + ")";
  }
  if (op == "stream")
    return "stream " + field("variant") + " " + field("dtype") + ", n=" + field("n");
  if (op == "custom") return "custom " + field("language") + " kernel " + field("entry");
  return op;
}

// What an import brought in: "import nsys_cuda_gpu_kern_sum, 12 kernels, roof dtype f32".
std::string import_line(const json& job) {
  const json::json_pointer ip{"/spec/import"};
  if (!job.contains(ip) || !job[ip].is_object()) return "import";
  const json& i = job[ip];
  const std::string kernels = i.contains("kernels") ? text_of(i["kernels"]) : "?";
  return "import " + string_at(i, "/format", "?") + ", " + kernels + " kernels, roof dtype " +
         string_at(i, "/dtype", "?");
}

std::string device_line(const json& job, const json& rows) {
  std::string index = job.contains("device") && job["device"].is_number_integer()
                          ? job["device"].dump()
                          : std::string();
  std::string name;
  for (const auto& r : rows) {
    name = string_at(r, "/environment/device");
    if (!name.empty()) break;
  }
  if (!index.empty() && !name.empty()) return index + ": " + name;
  if (!index.empty() || !name.empty()) return index + name;
  if (job.value("op", "") == "import") return "not named by the import";
  return "not assigned yet";
}

struct time_unit {
  const char* name;
  double per_us;
};

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", v);
  return buf;
}

// Three significant digits: "3.21x", "21.8x", "102x".
std::string speedup(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*fx", v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2, v);
  return buf;
}

// An ok point with a time to compare (a zero median would make every speedup infinite).
bool is_ok(const json& row) {
  return row.value("status", "") == "ok" && number_at(row, "/time_us/median").value_or(0) > 0;
}

// A held-out point of a task without its sizes and times (the daemon shows them to operators
// only).
bool is_hidden_held_out(const json& row) {
  return row.value("held_out", false) == true && !row.contains("params");
}

// What a held-out point shows: whether it was correct, its score and flags (none of them where
// the task keeps its held-out scores private).
std::string held_out_note(const json& row) {
  std::string note = "sizes and times not shown";
  if (!row.contains("fitness"))
    return note + ", nor its score (the task's held-out scores are private)";
  const json::json_pointer correct{"/fitness/correct"};
  if (row.value("status", "") == "ok") {
    note += row.contains(correct) && row[correct] == true ? "; correct" : "; incorrect";
  }
  if (const auto score = number_at(row, "/fitness/combined_score"))
    note += ", score " + format_significant(*score, 3);
  if (row.contains("flags") && row["flags"].is_array() && !row["flags"].empty()) {
    std::string flags;
    for (const auto& f : row["flags"])
      if (f.is_string()) flags += (flags.empty() ? "" : ", ") + f.get<std::string>();
    note += "; flags: " + flags;
  }
  return note;
}

// "void: verification_failed": the flags of a row that void its score, or "" where none does.
std::string voiding_note(const json& row) {
  const auto flags = voiding_flags(flags_of(row));
  return flags.empty() ? "" : "void: " + comma_joined(flags);
}

std::string ci_text(const json& ci) {
  if (!ci.is_array() || ci.size() != 2 || !ci[0].is_number() || !ci[1].is_number()) return "-";
  return format_significant(ci[0].get<double>(), 3) + ".." +
         format_significant(ci[1].get<double>(), 3);
}

// A long error (a compiler's log, many lines) is shown once, beneath the table, not in every
// row that failed with it: the rows and the header show its first line.
class error_logs {
 public:
  // `source_name`, where given, stands for the name the engine gives the source in its logs
  // (kernel.cl, kernel.cu, kernel.hip): the user's file.
  explicit error_logs(std::string source_name) : m_source_name(std::move(source_name)) {}

  // "type: message" as a cell or header shows it: whole where it is one line; else its first
  // line, and the rest kept to be shown beneath the table (with `where`, the point it came from,
  // when there is one).
  std::string cell(const std::string& type, const std::string& message, const std::string& where) {
    const std::string text = type.empty() ? message : type + ": " + message;
    const auto end = text.find('\n');
    if (end == std::string::npos || text.find_first_not_of(" \r\n", end) == std::string::npos)
      return one_line(text);
    std::string first = text.substr(0, end);
    while (!first.empty() && (first.back() == ':' || first.back() == ' ' || first.back() == '\r'))
      first.pop_back();
    const std::string log = named(text.substr(end + 1));
    auto it =
        std::find_if(m_logs.begin(), m_logs.end(), [&](const auto& l) { return l.text == log; });
    if (it == m_logs.end()) {
      m_logs.push_back({log, type, {}});
      it = std::prev(m_logs.end());
    }
    if (!where.empty()) it->where.push_back(where);
    if (it->type.empty() || (!type.empty() && !where.empty())) it->type = type;
    return one_line(first) + " (log below)";
  }

  // The logs kept, each once: a line naming where it came from, then its lines.
  std::string render() const {
    std::string out;
    for (const auto& l : m_logs) {
      std::string title = l.type.empty() ? "log" : l.type;
      if (!l.where.empty()) {
        title += " at ";
        for (std::size_t i = 0; i < l.where.size() && i < 6; ++i)
          title += (i ? "; " : "") + l.where[i];
        if (l.where.size() > 6) title += "; and " + std::to_string(l.where.size() - 6) + " more";
      }
      out += one_line(title) + ":\n";
      std::size_t at = 0;
      while (at < l.text.size()) {
        const auto end = l.text.find('\n', at);
        const std::string line =
            l.text.substr(at, end == std::string::npos ? std::string::npos : end - at);
        if (line.find_first_not_of(" \r") != std::string::npos) out += "  " + one_line(line) + "\n";
        if (end == std::string::npos) break;
        at = end + 1;
      }
    }
    return out.empty() ? out : out + "\n";
  }

 private:
  std::string named(const std::string& text) const {
    if (m_source_name.empty()) return text;
    std::string out;
    for (std::size_t at = 0; at < text.size();) {
      const bool word_start = at == 0 || std::isspace(static_cast<unsigned char>(text[at - 1]));
      bool replaced = false;
      for (const std::string_view engine_name : {"kernel.cl:", "kernel.cu:", "kernel.hip:"}) {
        if (word_start && text.compare(at, engine_name.size(), engine_name) == 0) {
          out += m_source_name + ":";
          at += engine_name.size();
          replaced = true;
          break;
        }
      }
      if (!replaced) out += text[at++];
    }
    return out;
  }

  struct kept_log {
    std::string text;
    std::string type;
    std::vector<std::string> where;
  };
  std::string m_source_name;
  std::vector<kept_log> m_logs;
};

// A user kernel's registers and occupancy, as columns where any row has them (the GPU engine
// tells them; OpenCL and the built-in ops do not).
class resource_columns {
 public:
  explicit resource_columns(const json& rows) {
    for (const auto& r : rows) {
      m_registers = m_registers || number_at(r, "/resources/registers").has_value();
      m_occupancy = m_occupancy || number_at(r, "/resources/occupancy").has_value();
    }
  }
  void add_to(std::vector<text_table::column>& columns) const {
    if (m_registers) columns.push_back({"regs", text_table::align::right});
    if (m_occupancy) columns.push_back({"occupancy", text_table::align::right});
  }
  void add_cells(const json& r, std::vector<std::string>& cells) const {
    if (m_registers) {
      const auto n = number_at(r, "/resources/registers");
      cells.push_back(n ? std::to_string(static_cast<long long>(*n)) : "-");
    }
    if (m_occupancy) {
      const auto o = number_at(r, "/resources/occupancy");
      cells.push_back(o ? percent(*o * 100) : "-");
    }
  }

 private:
  bool m_registers = false;
  bool m_occupancy = false;
};

// A job with variants: per point a table of its variants, fastest first, with their speedups
// over the slowest variant there and over the baseline variant (and that speedup's 95%
// interval); then the best variant of each point, and overall.
std::string variants_report(const json& job, const json& rows,
                            const std::vector<std::string>& names, const time_unit& unit,
                            error_logs& logs) {
  using col = text_table::column;
  constexpr auto right = text_table::align::right;
  constexpr auto left = text_table::align::left;
  const std::string baseline = string_at(job, "/spec/baseline");
  std::vector<std::string> variant_names;
  for (const auto& v : job["spec"]["variants"])
    variant_names.push_back(string_at(v, "/name", "?"));

  std::vector<std::uint64_t> order;
  std::map<std::uint64_t, std::vector<const json*>> points;
  for (const auto& r : rows) {
    const std::uint64_t index = r.value("index", std::uint64_t(0));
    auto [it, inserted] = points.try_emplace(index);
    if (inserted) order.push_back(index);
    it->second.push_back(&r);
  }
  std::vector<col> columns{
      col{"variant", left}, col{"status", left},     col{std::string("median ") + unit.name, right},
      col{"95% CI", right}, col{"TFLOP/s", right},   col{"GB/s", right},
      col{"roof", right},   col{"vs slowest", right}};
  if (!baseline.empty()) columns.push_back(col{"vs " + baseline, right});
  columns.push_back(col{"speedup CI", right});
  const resource_columns resources(rows);
  resources.add_to(columns);
  text_table table(std::move(columns));
  const char* compared =
      baseline.empty() ? "/comparison/over_slowest" : "/comparison/over_baseline";
  std::string best_lines;
  std::vector<variant_row> summary_rows;
  for (const std::uint64_t index : order) {
    auto& group = points[index];
    const json& first = *group.front();
    const std::string title = names.empty() ? "point " + std::to_string(index)
                                            : assignment(first, names, 0, names.size());
    table.add_section(title);
    std::stable_sort(group.begin(), group.end(), [](const json* a, const json* b) {
      if (is_ok(*a) != is_ok(*b)) return is_ok(*a);
      return is_ok(*a) && *number_at(*a, "/time_us/median") < *number_at(*b, "/time_us/median");
    });
    for (const json* rp : group) {
      const json& r = *rp;
      const std::string variant = string_at(r, "/variant", "?");
      variant_row v;
      v.point = index;
      v.variant = variant;
      v.ok = is_ok(r);
      v.median_us = number_at(r, "/time_us/median");
      v.over_baseline = number_at(r, "/comparison/over_baseline/speedup");
      v.over_slowest = number_at(r, "/comparison/over_slowest/speedup");
      v.voided = any_voids_score(flags_of(r));
      summary_rows.push_back(v);
      if (!is_ok(r)) {
        const std::string why = logs.cell(string_at(r, "/error/type", "no timing"),
                                          string_at(r, "/error/message"), title + ", " + variant);
        table.add_row({variant, r.value("status", "?")}, why);
        continue;
      }
      const double median = *number_at(r, "/time_us/median");
      const auto low = number_at(r, "/time_us/ci95_low");
      const auto high = number_at(r, "/time_us/ci95_high");
      const auto flops = number_at(r, "/metrics/flops");
      const auto bytes = number_at(r, "/metrics/bytes");
      const auto tflops = number_at(r, "/metrics/tflops");
      const auto gbps = number_at(r, "/metrics/gbps");
      const auto roof = number_at(r, "/metrics/roof_pct");
      const auto over_slowest = number_at(r, "/comparison/over_slowest/speedup");
      std::vector<std::string> cells{
          variant,
          "ok",
          format_significant(median * unit.per_us, k_digits),
          low && high ? "±" + format_significant((*high - *low) / 2 * unit.per_us, k_ci_digits)
                      : "-",
          tflops && flops.value_or(1) > 0 ? format_significant(*tflops, k_digits) : "-",
          gbps && bytes.value_or(1) > 0 ? format_significant(*gbps, k_digits) : "-",
          roof ? percent(*roof) : "-",
          over_slowest ? speedup(*over_slowest) : "-"};
      if (!baseline.empty()) {
        const auto over = number_at(r, "/comparison/over_baseline/speedup");
        cells.push_back(over ? speedup(*over) : "-");
      }
      const json::json_pointer ci{std::string(compared) + "/ci95"};
      cells.push_back(r.contains(ci) ? ci_text(r[ci]) : "-");
      resources.add_cells(r, cells);
      table.add_row(std::move(cells), voiding_note(r));
    }
    // The fastest of the point whose flags do not void its score: sorted, the first such one.
    const auto sound = std::find_if(group.begin(), group.end(), [](const json* r) {
      return is_ok(*r) && !any_voids_score(flags_of(*r));
    });
    std::string line = title + ": ";
    if (sound == group.end()) {
      line += is_ok(*group.front()) ? "none: every variant that measured has a flag that voids "
                                      "its score"
                                    : "none: every variant failed";
    } else {
      const json& best = **sound;
      line += string_at(best, "/variant", "?") + ", " +
              format_significant(*number_at(best, "/time_us/median") * unit.per_us, k_digits) +
              " " + unit.name;
      const char* over =
          baseline.empty() ? "/comparison/over_slowest" : "/comparison/over_baseline";
      const json::json_pointer x{std::string(over) + "/speedup"};
      const json::json_pointer who{std::string(over) + "/variant"};
      if (best.contains(x) && best[x].is_number() && best.contains(who)) {
        line += ", " + speedup(best[x].get<double>()) + " " + text_of(best[who]);
      }
    }
    best_lines += (best_lines.empty() ? "best    " : "        ") + line + "\n";
  }
  std::string out = table.render() + "\n" + logs.render() + best_lines;
  const auto summary =
      summarize_variants(summary_rows, variant_names,
                         baseline.empty() ? std::nullopt : std::optional<std::string>(baseline));
  std::string overall;
  if (!summary.best) {
    const bool measured = std::any_of(summary.variants.begin(), summary.variants.end(),
                                      [](const variant_totals& v) { return v.ok_points > 0; });
    overall = measured ? "none: every variant has a point whose flags void its score"
                       : "none: no variant measured";
  } else {
    for (const auto& v : summary.variants) {
      if (v.name != *summary.best) continue;
      overall = v.name + ": " + speedup(*v.geomean_speedup) + " " +
                (baseline.empty() ? std::string("the slowest") : baseline) +
                " (geometric mean over " + counted(static_cast<long long>(v.ok_points), "point") +
                "), fastest at " + std::to_string(v.wins) + " of " +
                counted(static_cast<long long>(summary.points), "point");
    }
  }
  out += "overall " + overall + "\n";
  return out;
}

}  // namespace

bool failed_verification(const json& row) {
  if (!row.is_object() || row.value("status", "") != "ok") return false;
  if (string_at(row, "/verification/status") == "failed") return true;
  const auto flags = flags_of(row);
  return std::any_of(flags.begin(), flags.end(), [](const std::string& f) {
    return f == "verification_failed" || f == "timed_output_mismatch" || f == "output_not_written";
  });
}

// The job's score where it has one (a task's candidate, a job with a fitness baseline or
// target): the combined score an agent loop optimises, how many points were correct, and what
// the score was made of; "" for a job without one.
std::string score_text(const json& job) {
  const json::json_pointer at{"/summary/fitness"};
  if (!job.contains(at) || !job[at].is_object()) return "";
  // Only a job that asked to be scored has a score worth reading: without a baseline or a
  // target every correct point scores 1 by definition (a task's candidate is always scored).
  const json::json_pointer baseline{"/spec/fitness/baseline"}, target{"/spec/fitness/target_us"};
  const bool asked =
      (job.contains(baseline) && !job[baseline].is_null() && job[baseline] != false) ||
      (job.contains(target) && job[target].is_number()) ||
      (job.contains("task") && job["task"].is_string());
  if (!asked) return "";
  const json& f = job[at];
  const auto score = number_at(f, "/combined_score");
  if (!score) return "";
  std::string out;
  if (f.value("withheld", false)) {
    out =
        "withheld: a speedup over 10x the baseline awaits an operator's confirmation "
        "(kernelscan confirm " +
        text_of(job.value("id", json())) + ")";
  } else {
    out = format_significant(*score, 3);
  }
  std::vector<std::string> parts;
  const auto points = number_at(f, "/points"), correct = number_at(f, "/correct_points");
  if (points && correct) {
    parts.push_back("correct at " + std::to_string(static_cast<long long>(*correct)) + " of " +
                    counted(static_cast<long long>(*points), "point"));
  }
  if (const auto speedup = number_at(f, "/speedup"))
    parts.push_back("speedup " + format_significant(*speedup, 3) + "x");
  if (const auto latency = number_at(f, "/latency_score"))
    parts.push_back("latency score " + format_significant(*latency, 3));
  if (f.value("confirmed", false)) parts.push_back("confirmed by an operator");
  if (string_at(f, "/held_out") == "private")
    parts.push_back("over the public points: the task keeps its held-out scores private");
  if (const auto flags = flags_of(f); !flags.empty())
    parts.push_back("flags " + comma_joined(flags));
  if (!parts.empty()) {
    out += " (";
    for (std::size_t i = 0; i < parts.size(); ++i)
      out += (i ? "; " : "") + parts[i];
    out += ")";
  }
  return out;
}

std::string results_report(const json& job, const json& rows, const std::string& source_name) {
  const std::vector<std::string> names = parameter_names(job, rows);
  error_logs logs(source_name);

  // The job-wide figures each row is compared with. The best is the job's: the lowest time per
  // unit of work (cost_of), or for imported kernels, which are unrelated, the fastest.
  const bool unrelated = job.value("op", "") == "import";
  // A held-out point of a task, as a reader without an operator token sees it: its status and
  // score, no sizes and no times. It counts as what its status says, and is never the best.
  std::size_t ok = 0, failed = 0, held_out = 0, shown_ok = 0, wrong = 0;
  // Ok points whose answers nobody checked (no reference): "ok" says they ran, nothing more.
  std::size_t unverified = 0;
  std::string unverified_why;
  const json* best = nullptr;
  double best_cost = 0;
  const json* slowest = nullptr;
  for (const auto& r : rows) {
    if (is_hidden_held_out(r)) {
      ++held_out;
      ++(r.value("status", "") == "ok" ? ok : failed);
      continue;
    }
    if (!is_ok(r)) {
      ++failed;
      continue;
    }
    ++ok;
    ++shown_ok;
    if (failed_verification(r)) ++wrong;
    if (string_at(r, "/verification/status") == "skipped" && r.value("simulated", false) != true &&
        job.value("op", "") != "import") {
      if (unverified++ == 0) unverified_why = string_at(r, "/verification/note");
    }
    const double median = *number_at(r, "/time_us/median");
    const double cost = unrelated ? median : cost_of(r).value_or(median);
    // As the job's own best point is: a point whose flags void its score is never it.
    if (!any_voids_score(flags_of(r)) && (!best || cost < best_cost)) {
      best = &r;
      best_cost = cost;
    }
    if (!slowest || median > *number_at(*slowest, "/time_us/median")) slowest = &r;
  }
  const double slowest_us = slowest ? *number_at(*slowest, "/time_us/median") : 0;
  const time_unit unit = slowest_us >= 1e5 ? time_unit{"ms", 1e-3} : time_unit{"µs", 1};

  std::string out = "job " + text_of(job.value("id", json()));
  const std::string name = job.value("name", "");
  if (!name.empty()) out += " \"" + one_line(name) + "\"";
  out += ": " + job.value("status", "?") + "\n";
  auto header = [&](const char* key, const std::string& value) {
    out += std::string(key) + std::string(8 - detail::display_width(key), ' ') + value + "\n";
  };
  if (job.contains("error") && job["error"].is_object()) {
    header("error", logs.cell(string_at(job, "/error/type"), string_at(job, "/error/message"), ""));
  }
  const bool imported = job.value("op", "") == "import";
  header("kernel", imported ? import_line(job) : kernel_line(job));
  header("device", device_line(job, rows));
  const auto total_points = number_at(job, "/progress/total");
  const std::string total =
      total_points ? std::to_string(static_cast<long long>(*total_points)) : "?";
  header("points", std::to_string(rows.size()) + " of " + total +
                       (imported ? " imported: " : " measured: ") + std::to_string(ok) + " ok" +
                       (wrong ? " (" + std::to_string(wrong) + " failed verification)" : "") +
                       ", " + std::to_string(failed) + " failed" +
                       (held_out ? ", " + std::to_string(held_out) + " held out (not shown)" : ""));
  if (const std::string score = score_text(job); !score.empty()) header("score", one_line(score));
  const std::size_t simulated =
      static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const json& r) {
        return r.is_object() && r.value("simulated", false) == true;
      }));
  if (simulated > 0) {
    header("note",
           "simulated: the mock engine's times come from a model of the device; the "
           "kernel was not compiled, run or verified");
  }
  if (unverified > 0) {
    header("note", std::string(unverified == shown_ok
                                   ? "not verified"
                                   : counted(static_cast<long long>(unverified), "ok point") +
                                         " not verified") +
                       (unverified_why.empty() ? "" : " (" + one_line(unverified_why) + ")") +
                       ": \"ok\" says that a point ran, not that its answers are right");
  }
  const std::size_t held =
      static_cast<std::size_t>(std::count_if(rows.begin(), rows.end(), [](const json& r) {
        return r.is_object() && r.contains("batch_correction") && r["batch_correction"].is_object();
      }));
  if (held > 0) {
    header("note", std::to_string(held) + (held == 1 ? " row" : " rows") +
                       " timed in hot batches held short by their buffer sets, read as the free "
                       "batch would read them (batch_correction)");
  }
  // Answered at once by an identical job's measurement: say whose, and how to measure again.
  if (const auto from = job.find("cached_from"); from != job.end() && from->is_number_integer()) {
    header("note", "from the result cache: job " + text_of(*from) +
                       " measured these points; kernelscan rerun " +
                       text_of(job.value("id", json())) + " measures them again");
  }
  if (job.contains("labels") && job["labels"].is_object() && !job["labels"].empty()) {
    std::string labels;
    for (const auto& [k, v] : job["labels"].items())
      labels += (labels.empty() ? "" : ", ") + k + "=" + text_of(v);
    header("labels", one_line(labels));
  }
  out += "\n";

  if (rows.empty()) return out + logs.render() + "no results yet\n";

  using col = text_table::column;
  constexpr auto right = text_table::align::right;
  constexpr auto left = text_table::align::left;
  if (job.contains(json::json_pointer{"/spec/variants"})) {
    out += variants_report(job, rows, names, unit, logs);
    return out;
  }
  const std::string row_key = names.empty() ? "point" : names.back();
  // A speedup compares two kernels at one point: this job's over its fitness baseline, never a
  // point of the sweep over another (a small GEMM is not "faster" than a large one).
  const bool baseline = std::any_of(rows.begin(), rows.end(), [](const json& r) {
    return number_at(r, "/fitness/speedup").has_value();
  });
  std::vector<col> columns{
      col{row_key, right},  col{"status", left},   col{std::string("median ") + unit.name, right},
      col{"95% CI", right}, col{"TFLOP/s", right}, col{"GB/s", right},
      col{"roof", right},   col{"bound", left}};
  // Kernels of an import are different kernels, not sizes of one: their share of the GPU time.
  if (imported) columns.push_back(col{"time", right});
  if (baseline) columns.push_back(col{"vs baseline", right});
  const resource_columns resources(rows);
  resources.add_to(columns);
  text_table table(std::move(columns));

  // Sections by all parameters but the last, in order of first appearance (rows arrive in
  // index order, so that is the sweep's order).
  std::vector<std::string> section_order;
  std::map<std::string, std::vector<const json*>> sections;
  for (const auto& r : rows) {
    const std::string key = names.size() < 2        ? ""
                            : is_hidden_held_out(r) ? "held out"
                                                    : assignment(r, names, 0, names.size() - 1);
    auto [it, inserted] = sections.try_emplace(key);
    if (inserted) section_order.push_back(key);
    it->second.push_back(&r);
  }

  for (const auto& key : section_order) {
    if (!key.empty()) table.add_section(key);
    for (const json* rp : sections[key]) {
      const json& r = *rp;
      if (is_hidden_held_out(r)) {
        table.add_row({"held out", r.value("status", "?")}, held_out_note(r));
        continue;
      }
      const std::string first =
          names.empty() ? text_of(r.value("index", json())) : param_value(r, names.back());
      if (!is_ok(r)) {
        const std::string why = logs.cell(string_at(r, "/error/type", "no timing"),
                                          string_at(r, "/error/message"), point_name(r, names));
        table.add_row({first, r.value("status", "?")}, why);
        continue;
      }
      const double median = *number_at(r, "/time_us/median");
      const auto low = number_at(r, "/time_us/ci95_low");
      const auto high = number_at(r, "/time_us/ci95_high");
      const std::string ci =
          low && high ? "±" + format_significant((*high - *low) / 2 * unit.per_us, k_ci_digits)
                      : "-";
      const auto flops = number_at(r, "/metrics/flops");
      const auto bytes = number_at(r, "/metrics/bytes");
      const auto tflops = number_at(r, "/metrics/tflops");
      const auto gbps = number_at(r, "/metrics/gbps");
      const auto roof = number_at(r, "/metrics/roof_pct");
      // A kernel that does no floating point work (a copy) has no meaningful TFLOP/s.
      const bool has_flops = tflops && flops.value_or(1) > 0;
      const bool has_bytes = gbps && bytes.value_or(1) > 0;
      const auto share = number_at(r, "/import/time_pct");
      std::vector<std::string> cells{first,
                                     "ok",
                                     format_significant(median * unit.per_us, k_digits),
                                     ci,
                                     has_flops ? format_significant(*tflops, k_digits) : "-",
                                     has_bytes ? format_significant(*gbps, k_digits) : "-",
                                     roof ? percent(*roof) : "-",
                                     string_at(r, "/metrics/bound", "-")};
      if (imported) cells.push_back(share ? percent(*share) : "-");
      if (baseline) {
        const auto x = number_at(r, "/fitness/speedup");
        cells.push_back(x ? speedup(*x) : "-");
      }
      resources.add_cells(r, cells);
      // An imported kernel's name runs on after the columns: C++ names are long. A point whose
      // flags void its score (a wrong answer) says so there, as `compare` marks it.
      std::string note = kernel_name(r, 200);
      if (const std::string v = voiding_note(r); !v.empty()) note += (note.empty() ? "" : "  ") + v;
      table.add_row(std::move(cells), note);
    }
  }
  out += table.render();
  out += "\n";
  out += logs.render();

  if (!best) {
    return out + (shown_ok ? "best    none: every measured point has a flag that voids its score\n"
                           : "best    none: no point succeeded\n");
  }
  const json& b = *best;
  const double best_us = *number_at(b, "/time_us/median");
  std::string line = point_name(b, names) + ": " +
                     format_significant(best_us * unit.per_us, k_digits) + " " + unit.name;
  if (const auto t = number_at(b, "/metrics/tflops"); t && number_at(b, "/metrics/flops") != 0.0)
    line += ", " + format_significant(*t, k_digits) + " TFLOP/s";
  if (const auto g = number_at(b, "/metrics/gbps"); g && number_at(b, "/metrics/bytes") != 0.0)
    line += ", " + format_significant(*g, k_digits) + " GB/s";
  if (const auto p = number_at(b, "/metrics/roof_pct"))
    line += ", " + percent(*p) + " of roof (" + string_at(b, "/metrics/bound", "?") + " bound)";
  header("best", line);
  // What the analysis advises for the best point, most useful first: where the kernel could go.
  if (const auto a = b.find("advice"); a != b.end() && a->is_array()) {
    const char* key = "advice";
    for (const auto& text : *a) {
      if (!text.is_string()) continue;
      header(key, one_line(text.get<std::string>()));
      key = "";
    }
  }
  return out;
}

}  // namespace kernelscan

#include "api/import_codec.hpp"

#include "api/device_codec.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <unordered_map>

#include "api/detail/csv_reader.hpp"
#include "api/detail/object_reader.hpp"
#include "api/detail/utf8.hpp"
#include "engine/text_list.hpp"

namespace kernelscan {
namespace {

// A bound as it is written: 1000000000000, not 1000000000000.000000.
std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.15g", v);
  return buf;
}

using detail::csv_error;
using detail::csv_reader;
using detail::csv_record;
using detail::index_path;
using detail::join_path;
using detail::json_type_name;
using detail::object_reader;
using detail::utf8_prefix;
using detail::valid_utf8;

// The longest time a kernel's statistic may read: eleven days (longer is a clock's, not a
// kernel's).
constexpr double k_max_us = 1e12;
constexpr std::size_t k_max_name = 16 * 1024;  // kernel names: long C++ templates, not essays
constexpr std::size_t k_max_errors = 20;       // a broken file need not list every line
constexpr double k_max_work = 1e30;            // flops or bytes per call

[[noreturn]] void fail(std::string field, std::string_view message) {
  throw validation_error(std::vector<field_error>{{std::move(field), utf8_prefix(message)}});
}

// Collects problems; stops listing after k_max_errors so a broken file of a million lines
// answers quickly with a readable error.
class problems {
 public:
  void add(std::string field, std::string message) {
    if (m_errors.size() < k_max_errors) {
      m_errors.push_back({utf8_prefix(field), utf8_prefix(message)});
    } else {
      m_more = true;
    }
  }
  // A CSV cell: the field is "data", the line and column lead the message.
  void cell(std::size_t line, std::string_view column, std::string message) {
    add("data", "line " + std::to_string(line) + ", column " + std::string(column) + ": " +
                    std::move(message));
  }
  // Call before checking another CSV line: false once enough problems are listed (and then
  // says that the rest of the file was not checked).
  bool go_on() {
    if (m_errors.size() < k_max_errors) return true;
    m_stopped = true;
    return false;
  }
  bool empty() const { return m_errors.empty(); }
  [[noreturn]] void raise() {
    if (m_more) m_errors.push_back({"data", "more problems not listed"});
    if (m_stopped) {
      m_errors.push_back({"data", "stopped after " + std::to_string(k_max_errors) +
                                      " problems; the lines after were not checked"});
    }
    throw validation_error(std::move(m_errors));
  }
  void raise_if_any() {
    if (!m_errors.empty()) raise();
  }

 private:
  std::vector<field_error> m_errors;
  bool m_more = false;
  bool m_stopped = false;
};

// A value quoted for a message, cut short.
std::string shown(std::string_view v) {
  std::string s = utf8_prefix(v, 40);
  for (char& c : s)
    if (std::iscntrl(static_cast<unsigned char>(c))) c = ' ';
  return "\"" + s + (v.size() > s.size() ? "...\"" : "\"");
}

// Digit groups ("5,850,000", as some nsys versions write totals) become plain digits; anything
// else with a comma is not a number.
std::optional<std::string> without_group_commas(std::string_view s) {
  if (s.find(',') == std::string_view::npos) return std::string(s);
  const auto dot = std::min(s.find('.'), s.size());
  const std::string_view whole = s.substr(0, dot);
  std::size_t digits = 0;
  bool first_group = true;
  std::string out;
  for (std::size_t i = 0; i <= whole.size(); ++i) {
    if (i == whole.size() || whole[i] == ',') {
      if (first_group ? (digits < 1 || digits > 3) : digits != 3) return std::nullopt;
      first_group = false;
      digits = 0;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(whole[i]))) return std::nullopt;
    ++digits;
    out += whole[i];
  }
  if (s.substr(dot).find(',') != std::string_view::npos) return std::nullopt;
  return out + std::string(s.substr(dot));
}

// A finite, non-negative decimal number filling the whole cell (spaces around it allowed).
std::optional<double> parse_number(std::string_view cell) {
  const auto plain = without_group_commas(trim_blanks(cell));
  if (!plain || plain->empty()) return std::nullopt;
  double v = 0;
  const char* end = plain->data() + plain->size();
  const auto [ptr, ec] = std::from_chars(plain->data(), end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> parse_count(std::string_view cell) {
  const auto plain = without_group_commas(trim_blanks(cell));
  if (!plain || plain->empty() || plain->find('.') != std::string::npos) return std::nullopt;
  std::uint64_t v = 0;
  const char* end = plain->data() + plain->size();
  const auto [ptr, ec] = std::from_chars(plain->data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// Every statistic a summary gives must lie between its min and max (a unit mix-up or swapped
// columns shows up here, before it becomes a row). Relative slack for rounding in the source.
// A median of 0 is no time (its rates would be infinite).
void check_order(const imported_stats& s, const std::function<void(std::string)>& error) {
  if (s.median && *s.median <= 0) error("median 0: a kernel's median time must be more than 0");
  if (!s.min || !s.max) return;
  if (*s.min > *s.max) {
    error("min " + std::to_string(*s.min) + " is above max " + std::to_string(*s.max));
    return;
  }
  const double slack = 1e-9 * std::max(1.0, *s.max);
  const std::pair<const char*, const std::optional<double>*> inner[] = {
      {"mean", &s.mean}, {"median", &s.median}, {"p5", &s.p5}, {"p95", &s.p95}, {"p99", &s.p99}};
  for (const auto& [name, value] : inner) {
    if (*value && (**value < *s.min - slack || **value > *s.max + slack)) {
      error(std::string(name) + " " + std::to_string(**value) + " is outside min " +
            std::to_string(*s.min) + " .. max " + std::to_string(*s.max));
    }
  }
}

std::string valid_name(std::string_view name, const std::function<void(std::string)>& error) {
  if (name.empty()) {
    error("a kernel name must not be empty");
  } else if (!valid_utf8(name)) {
    error("a kernel name must be UTF-8 text");
  } else if (std::any_of(name.begin(), name.end(), [](char c) {
               return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
             })) {
    error("a kernel name must not hold control characters (a NUL, a tab, a line break)");
  } else if (name.size() > k_max_name) {
    error("a kernel name of " + std::to_string(name.size()) + " bytes; the limit is " +
          std::to_string(k_max_name));
  }
  return std::string(name);
}

// ---- rocm_profiler ----

// One entry of `components` (or `full_pipeline`). Reads the field names the seed profiler
// writes and a few obvious aliases; other fields are the source's business and are ignored.
imported_kernel read_component(const json& v, const std::string& path, std::string name,
                               problems& errs) {
  imported_kernel k;
  if (!v.is_object()) {
    errs.add(path, "must be an object, not " + std::string(json_type_name(v)));
    return k;
  }
  k.name = valid_name(name, [&](std::string m) { errs.add(path, std::move(m)); });
  auto number = [&](std::initializer_list<const char*> keys, double hi) -> std::optional<double> {
    for (const char* key : keys) {
      auto it = v.find(key);
      if (it == v.end() || it->is_null()) continue;
      if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0 ||
          it->get<double>() > hi) {
        errs.add(join_path(path, key),
                 it->is_number() ? "must be a number from 0 to " + number_text(hi)
                                 : "must be a number, not " + std::string(json_type_name(*it)));
        return std::nullopt;
      }
      return it->get<double>();
    }
    return std::nullopt;
  };
  k.stats.mean = number({"mean_us"}, k_max_us);
  k.stats.median = number({"p50_us", "median_us"}, k_max_us);
  k.stats.min = number({"min_us"}, k_max_us);
  k.stats.max = number({"max_us"}, k_max_us);
  k.stats.stddev = number({"std_us", "stddev_us"}, k_max_us);
  k.stats.p5 = number({"p5_us"}, k_max_us);
  k.stats.p95 = number({"p95_us"}, k_max_us);
  k.stats.p99 = number({"p99_us"}, k_max_us);
  k.flops = number({"flops_estimated", "flops"}, k_max_work);
  k.bytes = number({"bytes_transferred", "bytes"}, k_max_work);
  if (auto calls = number({"count", "calls", "iterations"}, 1e15)) {
    if (*calls != std::floor(*calls)) {
      errs.add(join_path(path, "count"), "must be a whole number of calls");
    } else {
      k.calls = std::uint64_t(*calls);
    }
  }
  if (auto it = v.find("type"); it != v.end() && it->is_string()) {
    k.type = utf8_prefix(it->get<std::string>(), 64);
  }
  if (!k.stats.median && !v.contains("p50_us") && !v.contains("median_us")) {
    errs.add(join_path(path, "p50_us"),
             "is required: the median time, which points are ranked and analysed by");
  }
  check_order(k.stats, [&](std::string m) { errs.add(path, std::move(m)); });
  return k;
}

// ---- CSV tables ----

// The columns of a CSV header, by name.
struct csv_columns {
  std::vector<std::string> names;
  std::optional<std::size_t> find(std::initializer_list<std::string_view> aliases) const {
    for (auto alias : aliases) {
      for (std::size_t i = 0; i < names.size(); ++i) {
        if (trim_blanks(names[i]) == alias) return i;
      }
    }
    return std::nullopt;
  }
  std::string listed() const {
    const std::string out = comma_joined(names);
    return out.size() > 300 ? utf8_prefix(out, 300) + "..." : out;
  }
};

std::vector<imported_kernel> by_total_time(std::vector<imported_kernel> kernels) {
  double all = 0;
  for (auto& k : kernels) {
    k = with_statistics(std::move(k));
    all += k.total_us.value_or(0);
  }
  for (auto& k : kernels) {
    if (all > 0 && k.total_us) k.time_pct = 100.0 * *k.total_us / all;
  }
  std::stable_sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) {
    return a.total_us.value_or(0) > b.total_us.value_or(0);
  });
  return kernels;
}

// A time column's unit, from its header's parenthesis: "Avg (ns)" -> 1e-3 (to µs). nsys wrote
// no unit before 2022 (nanoseconds); later versions can be asked for others.
std::optional<double> unit_to_us(std::string_view unit) {
  if (unit.empty() || unit == "ns" || unit == "nsec") return 1e-3;
  if (unit == "us" || unit == "usec" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return 1.0;
  if (unit == "ms" || unit == "msec") return 1e3;
  if (unit == "s" || unit == "sec") return 1e6;
  return std::nullopt;
}

// "Avg (ns)" -> ("avg", "ns"); "Time(%)" -> ("time", "%"); "Name" -> ("name", "").
std::pair<std::string, std::string> label_and_unit(std::string_view header) {
  header = trim_blanks(header);
  std::string_view unit;
  if (const auto open = header.rfind('('); open != std::string_view::npos && header.back() == ')') {
    unit = trim_blanks(header.substr(open + 1, header.size() - open - 2));
    header = trim_blanks(header.substr(0, open));
  }
  std::string label;
  for (char c : header)
    label += char(std::tolower(static_cast<unsigned char>(c)));
  return {label, std::string(unit)};
}

}  // namespace

std::string_view to_string(import_format f) {
  switch (f) {
    case import_format::rocm_profiler:
      return "rocm_profiler";
    case import_format::rocprofv3_kernel_trace:
      return "rocprofv3_kernel_trace";
    case import_format::nsys_cuda_gpu_kern_sum:
      return "nsys_cuda_gpu_kern_sum";
  }
  return "?";
}

std::string_view point_parameter(import_format f) {
  return f == import_format::rocm_profiler ? "component" : "kernel";
}

std::vector<imported_kernel> read_rocm_profiler(const json& data) {
  problems errs;
  if (!data.is_object()) {
    errs.add("data",
             "must be the profiler's results object, not " + std::string(json_type_name(data)));
    errs.raise();
  }
  std::vector<imported_kernel> out;
  const auto components = data.find("components");
  if (components == data.end() || components->is_null()) {
    errs.add("data.components", "is required: the profiled components, by name");
  } else if (components->is_object()) {
    for (const auto& [name, v] : components->items()) {
      out.push_back(read_component(v, join_path("data.components", name), name, errs));
    }
  } else if (components->is_array()) {
    for (std::size_t i = 0; i < components->size(); ++i) {
      const json& v = (*components)[i];
      const std::string path = index_path("data.components", i);
      const auto name = v.is_object() ? v.find("name") : v.end();
      if (v.is_object() && (name == v.end() || !name->is_string())) {
        errs.add(join_path(path, "name"), "is required (a string) in a list of components");
        continue;
      }
      out.push_back(read_component(v, path, v.is_object() ? name->get<std::string>() : "", errs));
    }
  } else {
    errs.add("data.components", "must be an object of components by name, not " +
                                    std::string(json_type_name(*components)));
  }
  if (const auto full = data.find("full_pipeline"); full != data.end() && !full->is_null()) {
    imported_kernel k = read_component(*full, "data.full_pipeline", "full_pipeline", errs);
    if (k.type.empty()) k.type = "pipeline";
    out.push_back(std::move(k));
  }
  if (errs.empty() && out.empty()) {
    errs.add("data.components", "has no components (and there is no full_pipeline)");
  }
  if (const auto config = data.find("config");
      config != data.end() && !config->is_null() && !config->is_object()) {
    errs.add("data.config", "must be an object, not " + std::string(json_type_name(*config)));
  }
  errs.raise_if_any();
  return out;
}

std::vector<imported_kernel> read_rocprofv3_kernel_trace(std::string_view text) {
  problems errs;
  std::vector<imported_kernel> kernels;
  try {
    csv_reader in(text);
    std::optional<csv_record> header;
    while ((header = in.next()) && header->blank()) {
    }
    if (!header) {
      errs.add("data",
               "is empty: expected kernel_trace.csv, a header line then one line per "
               "kernel dispatch");
      errs.raise();
    }
    const csv_columns cols{header->fields};
    const auto name_col = cols.find({"Kernel_Name", "KernelName"});
    const auto start_col = cols.find({"Start_Timestamp", "BeginNs"});
    const auto end_col = cols.find({"End_Timestamp", "EndNs"});
    const auto kind_col = cols.find({"Kind"});
    for (const auto& [col, name] :
         {std::pair{name_col, "Kernel_Name"}, std::pair{start_col, "Start_Timestamp"},
          std::pair{end_col, "End_Timestamp"}}) {
      if (!col) {
        errs.add("data", "line " + std::to_string(header->line) + ": no " + name +
                             " column in the header (it has: " + cols.listed() + ")");
      }
    }
    errs.raise_if_any();

    std::unordered_map<std::string, std::size_t> index;
    std::size_t dispatches = 0;
    while (auto rec = in.next()) {
      if (rec->blank()) continue;
      if (!errs.go_on()) break;
      if (rec->fields.size() != cols.names.size()) {
        errs.add("data", "line " + std::to_string(rec->line) + ": " +
                             std::to_string(rec->fields.size()) + " fields; the header has " +
                             std::to_string(cols.names.size()));
        continue;
      }
      if (kind_col && trim_blanks(rec->fields[*kind_col]) != "KERNEL_DISPATCH") continue;
      const auto& name = rec->fields[*name_col];
      bool ok = true;
      valid_name(name, [&](std::string m) {
        errs.cell(rec->line, "Kernel_Name", std::move(m));
        ok = false;
      });
      const auto start = parse_count(rec->fields[*start_col]);
      const auto end = parse_count(rec->fields[*end_col]);
      if (!start) {
        errs.cell(rec->line, cols.names[*start_col],
                  shown(rec->fields[*start_col]) + " is not a timestamp (whole nanoseconds)");
      }
      if (!end) {
        errs.cell(rec->line, cols.names[*end_col],
                  shown(rec->fields[*end_col]) + " is not a timestamp (whole nanoseconds)");
      }
      if (!ok || !start || !end) continue;
      if (*end < *start) {
        errs.cell(rec->line, cols.names[*end_col],
                  std::to_string(*end) + " is before the start, " + std::to_string(*start));
        continue;
      }
      // Integer nanoseconds: timestamps near 2^60 would lose their low digits as doubles.
      const double us = double(*end - *start) / 1e3;
      if (us > k_max_us) {
        errs.cell(rec->line, cols.names[*end_col],
                  "a dispatch of " + number_text(us) + " µs (more than " + number_text(k_max_us) +
                      ", eleven days): not a kernel's time");
        continue;
      }
      auto [it, fresh] = index.try_emplace(name, kernels.size());
      if (fresh) {
        kernels.push_back({});
        kernels.back().name = name;
      }
      kernels[it->second].samples_us.push_back(us);
      ++dispatches;
    }
    if (errs.empty() && dispatches == 0) {
      errs.add("data", "has a header but no kernel dispatches (no KERNEL_DISPATCH lines)");
    }
  } catch (const csv_error& e) {
    errs.add("data", e.what());
  }
  errs.raise_if_any();
  return by_total_time(std::move(kernels));
}

std::vector<imported_kernel> read_nsys_cuda_gpu_kern_sum(std::string_view text) {
  problems errs;
  std::vector<imported_kernel> kernels;
  try {
    csv_reader in(text);
    // nsys prints progress lines ("Processing [report.sqlite] with [...]...") and a title before
    // the table; the header is the first line with Name and Instances columns.
    std::optional<csv_record> header;
    while (!in.at_end()) {
      const auto mark = in.position();
      std::optional<csv_record> rec;
      try {
        rec = in.next();
      } catch (const csv_error&) {
        rec.reset();
      }
      if (rec) {
        bool has_name = false, has_instances = false;
        for (const auto& f : rec->fields) {
          const auto [label, unit] = label_and_unit(f);
          has_name = has_name || label == "name";
          has_instances = has_instances || label == "instances";
        }
        if (has_name && has_instances) {
          header = std::move(rec);
          break;
        }
      }
      in.seek(mark);
      in.skip_line();
    }
    if (!header) {
      errs.add("data", text.find_first_not_of(" \t\r\n") == std::string_view::npos
                           ? "is empty: expected the CSV of nsys stats --report cuda_gpu_kern_sum"
                           : "has no cuda_gpu_kern_sum table: no header line with Name and "
                             "Instances columns (nsys stats --report cuda_gpu_kern_sum --format "
                             "csv writes one)");
      errs.raise();
    }

    enum stat { c_name, c_instances, c_total, c_pct, c_mean, c_median, c_min, c_max, c_stddev };
    struct column {
      std::size_t at;
      double to_us;
    };
    std::map<stat, column> cols;
    const std::map<std::string, stat> k_labels{
        {"name", c_name},        {"instances", c_instances},
        {"total time", c_total}, {"time", c_pct},
        {"avg", c_mean},         {"average", c_mean},
        {"med", c_median},       {"median", c_median},
        {"min", c_min},          {"minimum", c_min},
        {"max", c_max},          {"maximum", c_max},
        {"stddev", c_stddev},    {"std dev", c_stddev},
    };
    for (std::size_t i = 0; i < header->fields.size(); ++i) {
      const auto [label, unit] = label_and_unit(header->fields[i]);
      const auto known = k_labels.find(label);
      if (known == k_labels.end() || cols.count(known->second)) continue;
      double to_us = 1;
      if (known->second == c_pct) {
        if (unit != "%") continue;
      } else if (known->second != c_name && known->second != c_instances) {
        const auto factor = unit_to_us(unit);
        if (!factor) {
          errs.add("data", "line " + std::to_string(header->line) + ", column " +
                               header->fields[i] + ": unknown time unit " + shown(unit) +
                               " (ns, us, ms or s)");
          continue;
        }
        to_us = *factor;
      }
      cols[known->second] = {i, to_us};
    }
    for (const auto& [f, title] : {std::pair{c_name, "Name"}, std::pair{c_instances, "Instances"},
                                   std::pair{c_median, "Med (ns)"}}) {
      if (!cols.count(f)) {
        errs.add("data", "line " + std::to_string(header->line) + ": no " + title +
                             " column in the header (it has: " +
                             csv_columns{header->fields}.listed() + ")");
      }
    }
    errs.raise_if_any();

    const std::size_t width = header->fields.size();
    while (auto rec = in.next()) {
      if (rec->blank()) break;  // the end of this report's table
      if (!errs.go_on()) break;
      if (rec->fields.size() != width) {
        errs.add("data", "line " + std::to_string(rec->line) + ": " +
                             std::to_string(rec->fields.size()) + " fields; the header has " +
                             std::to_string(width));
        continue;
      }
      imported_kernel k;
      bool ok = true;
      k.name = valid_name(rec->fields[cols[c_name].at], [&](std::string m) {
        errs.cell(rec->line, header->fields[cols[c_name].at], std::move(m));
        ok = false;
      });
      const std::string& calls_cell = rec->fields[cols[c_instances].at];
      k.calls = parse_count(calls_cell);
      if (!k.calls || *k.calls == 0) {
        errs.cell(rec->line, header->fields[cols[c_instances].at],
                  shown(calls_cell) + " is not a number of instances (a whole number from 1)");
        ok = false;
      }
      auto number = [&](stat f) -> std::optional<double> {
        const auto c = cols.find(f);
        if (c == cols.end()) return std::nullopt;
        const std::string& cell = rec->fields[c->second.at];
        const auto v = parse_number(cell);
        if (!v) {
          errs.cell(rec->line, header->fields[c->second.at],
                    shown(cell) + " is not a number (a duration, 0 or more)");
          ok = false;
          return std::nullopt;
        }
        return *v * c->second.to_us;
      };
      k.stats.median = number(c_median);
      k.stats.mean = number(c_mean);
      k.stats.min = number(c_min);
      k.stats.max = number(c_max);
      k.stats.stddev = number(c_stddev);
      k.total_us = number(c_total);
      if (const auto c = cols.find(c_pct); c != cols.end()) {
        k.time_pct = parse_number(rec->fields[c->second.at]);
        if (!k.time_pct || *k.time_pct > 100.0001) {
          errs.cell(rec->line, header->fields[c->second.at],
                    shown(rec->fields[c->second.at]) + " is not a percentage");
          ok = false;
        }
      }
      if (!ok) continue;
      check_order(k.stats, [&](std::string m) {
        errs.add("data", "line " + std::to_string(rec->line) + ": " + std::move(m));
      });
      kernels.push_back(std::move(k));
    }
    if (errs.empty() && kernels.empty()) {
      errs.add("data",
               "line " + std::to_string(header->line) + ": the table has a header but no kernels");
    }
  } catch (const csv_error& e) {
    errs.add("data", e.what());
  }
  errs.raise_if_any();
  return kernels;
}

namespace {

const device_model* catalog_model(std::string_view name) {
  if (const auto* m = find_device_model(name)) return m;
  return match_device_model(name);
}

// dtype spellings of the tools that write configs: torch.bfloat16, fp16, float32, half.
std::optional<dtype> loose_dtype(std::string_view text) {
  std::string s;
  for (char c : text)
    s += char(std::tolower(static_cast<unsigned char>(c)));
  if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  if (s == "float16" || s == "fp16" || s == "half") return dtype::f16;
  if (s == "bfloat16") return dtype::bf16;
  if (s == "float32" || s == "fp32" || s == "float") return dtype::f32;
  if (s == "float64" || s == "fp64" || s == "double") return dtype::f64;
  if (s == "int8") return dtype::i8;
  return parse_dtype(s);
}

std::string known_models() {
  std::string out;
  for (const auto& m : device_catalog())
    out += (out.empty() ? "" : ", ") + std::string(m.key);
  return out;
}

}  // namespace

import_request parse_import(const json& body, const import_limits& limits) {
  std::vector<field_error> errors;
  object_reader r(body, "", errors);
  if (!r.ok()) throw validation_error(std::move(errors));
  import_request req;
  const auto format =
      r.choice<import_format>("format",
                              {{"rocm_profiler", import_format::rocm_profiler},
                               {"rocprofv3_kernel_trace", import_format::rocprofv3_kernel_trace},
                               {"nsys_cuda_gpu_kern_sum", import_format::nsys_cuda_gpu_kern_sum}},
                              true);
  if (format) req.format = *format;
  req.name =
      r.string("name", 200)
          .value_or(format ? std::string(to_string(*format)) + " import" : std::string("import"));
  if (const json* labels = r.get("labels")) {
    req.labels = detail::read_labels(*labels, "labels", limits.max_labels, errors);
  }
  // As for a job: the label that lists a task's jobs is the daemon's, so that no import of
  // times measured elsewhere passes for a task's measured submission.
  if (req.labels.count("task")) {
    r.error("labels.task",
            "is the daemon's: it labels the jobs of an evaluation task's submissions "
            "(POST /api/v1/tasks/{name}/submissions)");
  }
  const auto device = r.string("device", 200);
  if (device) {
    req.target.model = catalog_model(*device);
    if (!req.target.model) {
      r.error("device", "\"" + *device + "\" is not a device model kernelscan knows (" +
                            known_models() + ")");
    }
    req.device_from = "request";
  }
  if (const auto t = r.string("dtype", 16)) {
    if (const auto d = parse_dtype(*t)) {
      req.target.roof_type = *d;
      req.dtype_from = "request";
    } else {
      r.error("dtype", "\"" + *t + "\" is not one of f64, f32, f16, bf16, i8 (or another dtype)");
    }
  }
  if (const json* work = r.get("work")) {
    if (!work->is_object()) {
      r.error("work", "must be an object: kernel name -> {\"flops\", \"bytes\"} per call, not " +
                          std::string(json_type_name(*work)));
    } else {
      for (const auto& [name, w] : work->items()) {
        object_reader wr(w, join_path("work", name), errors);
        kernel_work kw;
        kw.flops = wr.number("flops", 0, k_max_work);
        kw.bytes = wr.number("bytes", 0, k_max_work);
        wr.finish();
        if (wr.ok() && !w.contains("flops") && !w.contains("bytes")) {
          errors.push_back({join_path("work", name), "gives neither flops nor bytes"});
        }
        req.work[name] = kw;
      }
    }
  }
  const json* data = r.get("data");
  if (!data) r.error("data", "is required: the results to import, as the source tool wrote them");
  r.finish();
  if (!errors.empty() || !format) throw validation_error(std::move(errors));

  switch (req.format) {
    case import_format::rocm_profiler: {
      // The results file as text in a string works too: what `jq --rawfile` or a form sends.
      json parsed;
      const json* d = data;
      if (data->is_string()) {
        try {
          parsed = parse_json(data->get_ref<const std::string&>());
        } catch (const json_syntax_error& e) {
          fail("data", std::string("is a string but not JSON: ") + e.what());
        }
        d = &parsed;
      }
      req.kernels = read_rocm_profiler(*d);
      if (const auto c = d->find("config"); c != d->end() && c->is_object()) req.config = *c;
      break;
    }
    case import_format::rocprofv3_kernel_trace:
    case import_format::nsys_cuda_gpu_kern_sum:
      if (!data->is_string()) {
        fail("data",
             "must be the CSV text as one string, not " + std::string(json_type_name(*data)));
      }
      req.kernels = req.format == import_format::rocprofv3_kernel_trace
                        ? read_rocprofv3_kernel_trace(data->get_ref<const std::string&>())
                        : read_nsys_cuda_gpu_kern_sum(data->get_ref<const std::string&>());
      break;
  }
  if (req.kernels.size() > limits.max_kernels) {
    fail("data", "has " + std::to_string(req.kernels.size()) + " kernels; the limit is " +
                     std::to_string(limits.max_kernels) + " points per job");
  }

  // Work from the request wins over the source's estimate: it is what the user says now.
  for (const auto& [name, w] : req.work) {
    bool found = false;
    for (auto& k : req.kernels) {
      if (k.name != name) continue;
      found = true;
      if (w.flops) k.flops = w.flops;
      if (w.bytes) k.bytes = w.bytes;
    }
    if (!found) errors.push_back({join_path("work", name), "no kernel of this name in data"});
  }
  if (!errors.empty()) throw validation_error(std::move(errors));

  // The source's own word on the device and dtype, where the request gives none.
  if (req.config.is_object()) {
    if (!device) {
      for (const char* key : {"gpu", "gpu_name", "device", "device_name", "gpu_model"}) {
        const auto it = req.config.find(key);
        if (it == req.config.end() || !it->is_string() || it->get<std::string>().empty()) continue;
        req.target.model = catalog_model(it->get<std::string>());
        req.target.device_name = utf8_prefix(it->get<std::string>(), 200);
        req.device_from = "config." + std::string(key);
        break;
      }
    }
    if (req.dtype_from.empty()) {
      const auto it = req.config.find("dtype");
      if (it != req.config.end() && it->is_string()) {
        if (const auto d = loose_dtype(it->get<std::string>())) {
          req.target.roof_type = *d;
          req.dtype_from = "config.dtype";
        }
      }
    }
  }
  if (req.target.model) req.target.device_name = std::string(req.target.model->name);
  if (req.dtype_from.empty()) req.dtype_from = "default";
  return req;
}

json import_spec_json(const import_request& request) {
  const auto& t = request.target;
  json device = nullptr;
  if (t.model || !t.device_name.empty()) {
    device = {{"name", t.device_name},
              {"model", t.model ? json(std::string(t.model->key)) : json(nullptr)},
              {"from", request.device_from}};
    device["datasheet"] = t.model ? to_json(t.model->peaks) : json(nullptr);
  }
  json work = json::object();
  for (const auto& [name, w] : request.work) {
    json one = json::object();
    if (w.flops) one["flops"] = *w.flops;
    if (w.bytes) one["bytes"] = *w.bytes;
    work[name] = std::move(one);
  }
  json imp = {{"format", to_string(request.format)}, {"device", std::move(device)},
              {"dtype", to_string(t.roof_type)},     {"dtype_from", request.dtype_from},
              {"kernels", request.kernels.size()},   {"work", std::move(work)}};
  if (!request.config.is_null()) imp["config"] = request.config;
  json labels = json::object();
  for (const auto& [k, v] : request.labels)
    labels[k] = v;
  json points = json::array();
  for (std::size_t i = 0; i < request.kernels.size(); ++i)
    points.push_back(i);
  return {{"name", request.name},
          {"labels", std::move(labels)},
          {"import", std::move(imp)},
          {"sweep", {{point_parameter(request.format), std::move(points)}}}};
}

}  // namespace kernelscan

#include "api/result_fields.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace kernelscan {
namespace {

// PointResult's members (api/openapi.yaml) and, for those that are objects of a fixed shape,
// their members. `params` holds the job's sweep parameters.
struct known_member {
  std::string_view name;
  std::vector<std::string_view> inner;
  bool is_params = false;
};

const std::vector<known_member>& known_members() {
  static const std::vector<known_member> k{
      {"index", {}},
      {"held_out", {}},  // only in a task's held-out rows as a candidate sees them
      {"params", {}, true},
      {"variant", {}},
      {"name", {}},
      {"status", {}},
      {"error", {"type", "message"}},
      {"simulated", {}},
      {"time_us",
       {"mean", "median", "min", "max", "stddev", "p5", "p95", "p99", "ci95_low", "ci95_high",
        "rel_noise"}},
      {"samples", {}},
      {"discarded_samples", {}},
      {"converged", {}},
      {"stop_reason", {}},
      {"sampling_ms", {}},
      {"batch", {}},
      {"batch_correction", {"free_batch", "fixed_cost_us", "us"}},
      {"l2", {}},
      {"metrics",
       {"flops", "bytes", "tflops", "gbps", "arithmetic_intensity", "roof_tflops", "roof_pct",
        "bound", "roof_source"}},
      {"resources",
       {"registers", "shared_bytes", "local_bytes", "max_block_threads", "block_multiple",
        "blocks_per_unit", "occupancy", "limited_by"}},
      {"verification",
       {"status",
        "trials",
        "max_abs_err",
        "max_rel_err",
        "unwritten",
        "tolerance",
        "note",
        "launches",
        "launch_us",
        "timed_checks",
        "timed_wrong",
        "timed_failed",
        "batch_probes",
        "split_samples",
        "launch_spread",
        "launch_excess_us",
        "builtin_excess_us",
        "inputs_written",
        "norm_rel_err",
        "ref_near_zero",
        "ref_not_finite",
        "written_out_of_bounds"}},
      {"flags", {}},
      {"advice", {}},
      {"fitness",
       {"correct", "speedup", "speedup_ci95", "baseline_us", "latency_score", "combined_score"}},
      {"comparison", {"over_slowest", "over_baseline"}},
      {"cache", {"hit", "job_id"}},
      {"import", {"format", "type", "total_us", "time_pct", "notes"}},
      {"environment", {"device", "driver", "clock_mhz", "temperature_c", "power_w"}},
  };
  return k;
}

// ---- a scanner over stored rows: finds where members start and end, never builds values ----

[[noreturn]] void malformed() {
  throw std::invalid_argument("a stored result row is not a JSON object");
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::size_t skip_spaces(std::string_view s, std::size_t i) {
  while (i < s.size() && is_space(s[i]))
    ++i;
  return i;
}

// One past the closing quote of the string whose opening quote is s[i].
std::size_t string_end(std::string_view s, std::size_t i) {
  for (++i; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == '"') {
      return i + 1;
    }
  }
  malformed();
}

// One past the end of the value that starts at s[i].
std::size_t value_end(std::string_view s, std::size_t i) {
  if (i >= s.size()) malformed();
  if (s[i] == '"') return string_end(s, i);
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    while (i < s.size()) {
      const char c = s[i];
      if (c == '"') {
        i = string_end(s, i);
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return i + 1;
      }
      ++i;
    }
    malformed();
  }
  const std::size_t start = i;
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && !is_space(s[i]))
    ++i;
  if (i == start) malformed();
  return i;
}

// Calls fn(key, value) for each member of the object `obj`, with the key's text as written
// (member names here are plain identifiers, which JSON writers do not escape) and the value's.
template <typename Fn>
void for_each_member(std::string_view obj, Fn&& fn) {
  std::size_t i = skip_spaces(obj, 0);
  if (i >= obj.size() || obj[i] != '{') malformed();
  i = skip_spaces(obj, i + 1);
  if (i < obj.size() && obj[i] == '}') return;
  for (;;) {
    if (i >= obj.size() || obj[i] != '"') malformed();
    const std::size_t key_end = string_end(obj, i);
    const std::string_view key = obj.substr(i + 1, key_end - i - 2);
    i = skip_spaces(obj, key_end);
    if (i >= obj.size() || obj[i] != ':') malformed();
    i = skip_spaces(obj, i + 1);
    const std::size_t end = value_end(obj, i);
    fn(key, obj.substr(i, end - i));
    i = skip_spaces(obj, end);
    if (i >= obj.size()) malformed();
    if (obj[i] == '}') return;
    if (obj[i] != ',') malformed();
    i = skip_spaces(obj, i + 1);
  }
}

void append_member(std::string& out, bool& first, std::string_view key, std::string_view value) {
  if (!first) out += ',';
  first = false;
  out += '"';
  out += key;
  out += "\":";
  out += value;
}

}  // namespace

result_fields result_fields::parse(std::string_view list,
                                   const std::vector<std::string>& param_names) {
  result_fields out;
  std::vector<std::string> seen;
  std::size_t pos = 0;
  for (;;) {
    const std::size_t comma = std::min(list.find(',', pos), list.size());
    const std::string_view item = list.substr(pos, comma - pos);
    if (item.empty()) throw std::invalid_argument("an empty field name");
    if (std::find(seen.begin(), seen.end(), item) != seen.end()) {
      throw std::invalid_argument("\"" + std::string(item) + "\" is named twice");
    }
    seen.emplace_back(item);
    const std::size_t dot = item.find('.');
    const std::string_view name = item.substr(0, dot);
    const auto& known = known_members();
    const auto k = std::find_if(known.begin(), known.end(),
                                [&](const known_member& m) { return m.name == name; });
    if (k == known.end()) {
      throw std::invalid_argument("\"" + std::string(item) + "\" is not a field of a result row");
    }
    std::string inner;
    if (dot != std::string_view::npos) {
      inner = std::string(item.substr(dot + 1));
      const bool ok =
          k->is_params
              ? std::find(param_names.begin(), param_names.end(), inner) != param_names.end()
              : std::find(k->inner.begin(), k->inner.end(), inner) != k->inner.end();
      if (!ok) {
        throw std::invalid_argument("\"" + std::string(item) + "\" is not a field of a result row" +
                                    (k->is_params ? " (not a sweep parameter of this job)"
                                     : k->inner.empty()
                                         ? " (" + std::string(name) + " is selected whole)"
                                         : ""));
      }
    }
    auto m = std::find_if(out.m_members.begin(), out.m_members.end(),
                          [&](const member& x) { return x.name == name; });
    if (m == out.m_members.end()) {
      out.m_members.push_back({std::string(name), {}});
      if (!inner.empty()) out.m_members.back().inner.push_back(std::move(inner));
    } else if (inner.empty()) {
      m->inner.clear();  // all of it, whatever else was named inside it
    } else if (!m->inner.empty()) {
      m->inner.push_back(std::move(inner));
    }
    // (`time_us` named before `time_us.median`: the whole member stays selected.)
    if (comma == list.size()) break;
    pos = comma + 1;
  }
  return out;
}

void result_fields::project(std::string_view row, std::string& out) const {
  out += '{';
  bool first = true;
  for_each_member(row, [&](std::string_view key, std::string_view value) {
    const auto m = std::find_if(m_members.begin(), m_members.end(),
                                [&](const member& x) { return x.name == key; });
    if (m == m_members.end()) return;
    if (m->inner.empty() || value.front() != '{') {
      append_member(out, first, key, value);
      return;
    }
    append_member(out, first, key, "{");
    bool inner_first = true;
    for_each_member(value, [&](std::string_view k, std::string_view v) {
      if (std::find(m->inner.begin(), m->inner.end(), k) != m->inner.end()) {
        append_member(out, inner_first, k, v);
      }
    });
    out += '}';
  });
  out += '}';
}

}  // namespace kernelscan

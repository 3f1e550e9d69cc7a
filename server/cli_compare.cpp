#include "server/cli_compare.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "api/result_codec.hpp"
#include "engine/fitness.hpp"
#include "engine/text_list.hpp"
#include "server/detail/text_table.hpp"

namespace kernelscan {
namespace {

using detail::counted;
using detail::format_significant;
using detail::text_table;

struct point {
  double median = 0;
  // The median's 95% interval (low, high); none for a summary import or fewer than 6 samples,
  // where no verdict of faster or slower can be had.
  std::optional<std::array<double, 2>> interval;
  double cost = 0;                   // cost_of(): what ranks a series' points sharing a key
  double flops = 0, bytes = 0;       // its work, where the row counts it
  std::vector<std::string> voiding;  // its flags that void its score
  json paired;                       // a variant's row's `comparison`, else null
  // A user kernel's registers and occupancy, where its platform told them (`resources`).
  std::optional<double> registers, occupancy;
};

// What changed in a kernel's resources from `base` to `other` ("registers 32 -> 64, occupancy
// 100% -> 50%"), where both rows tell them; "" where nothing did. A slower point's likely cause.
std::string resource_change(const point& base, const point& other) {
  std::string out;
  const auto add = [&](const char* what, const std::optional<double>& a,
                       const std::optional<double>& b, double scale, const char* unit) {
    if (!a || !b || *a == *b) return;
    char text[96];
    std::snprintf(text, sizeof text, "%s%s %.0f%s -> %.0f%s", out.empty() ? "" : ", ", what,
                  *a * scale, unit, *b * scale, unit);
    out += text;
  };
  add("registers", base.registers, other.registers, 1, "");
  add("occupancy", base.occupancy, other.occupancy, 100, "%");
  return out;
}

// Of two points at one key, the one that stands for its series: a sound one over one whose
// flags void its score (as a job's best point is never such a one), then the one of the
// highest throughput.
bool better(const point& a, const point& b) {
  if (a.voiding.empty() != b.voiding.empty()) return a.voiding.empty();
  return a.cost < b.cost;
}

std::optional<point> point_of(const json& row) {
  if (row.value("status", "") != "ok") return std::nullopt;
  const json::json_pointer t{"/time_us"};
  if (!row.contains(t) || !row[t].is_object()) return std::nullopt;
  const json& time = row[t];
  if (!time.contains("median") || !time["median"].is_number()) return std::nullopt;
  point p;
  p.median = time["median"].get<double>();
  if (!(p.median > 0)) return std::nullopt;
  if (time.contains("ci95_low") && time["ci95_low"].is_number() && time.contains("ci95_high") &&
      time["ci95_high"].is_number()) {
    p.interval = {time["ci95_low"].get<double>(), time["ci95_high"].get<double>()};
  }
  p.cost = cost_of(row).value_or(p.median);
  if (const auto m = row.find("metrics"); m != row.end() && m->is_object()) {
    const auto positive = [&](const char* key) {
      const auto it = m->find(key);
      return it != m->end() && it->is_number() && it->get<double>() > 0 ? it->get<double>() : 0.0;
    };
    p.flops = positive("flops");
    p.bytes = positive("bytes");
  }
  p.voiding = voiding_flags(flags_of(row));
  if (const auto c = row.find("comparison"); c != row.end() && c->is_object()) p.paired = *c;
  p.registers = number_at(row, "/resources/registers");
  p.occupancy = number_at(row, "/resources/occupancy");
  return p;
}

// `other` against `base` at one key: its speedup and verdict. Where the two points do different
// work (a series sweeps a parameter the others do not, and its point of the highest throughput
// is another problem size), they are of throughput, time per FLOP, else per byte: a GEMM with
// 16 times the K is not a slower kernel for taking longer.
struct comparison {
  double speedup = 0;
  const char* verdict = "same";
  bool same_work = true;
};

// A speedup and its 95% interval from a variant row's `comparison`, over variant `over`:
// the median of the paired ratios of the two variants' interleaved samples (the interval 0 to
// infinity where it has none: fewer than 6 pairs decide nothing). Null where the row was not
// measured against `over` (it is neither the point's baseline nor its slowest).
std::optional<std::array<double, 3>> paired_speedup(const json& c, const std::string& over) {
  if (!c.is_object()) return std::nullopt;
  for (const char* member : {"over_baseline", "over_slowest"}) {
    const auto m = c.find(member);
    if (m == c.end() || !m->is_object() || m->value("variant", json()) != over) continue;
    const auto s = m->find("speedup");
    if (s == m->end() || !s->is_number() || !(s->get<double>() > 0)) continue;
    const double v = s->get<double>();
    std::array<double, 3> out{v, 0, std::numeric_limits<double>::infinity()};
    if (const auto ci = m->find("ci95"); ci != m->end() && ci->is_array() && ci->size() == 2 &&
                                         (*ci)[0].is_number() && (*ci)[1].is_number() &&
                                         (*ci)[0].get<double>() > 0) {
      out[1] = (*ci)[0].get<double>();
      out[2] = (*ci)[1].get<double>();
    }
    return out;
  }
  return std::nullopt;
}

// Two variants of one job at one point, from the daemon's paired ratios where one of them was
// measured against the other (the other's speedup over it is the inverse of its own); faster
// or slower where the ratios' 95% interval leaves out 1.
std::optional<comparison> compare_paired(const point& base, const std::string& base_name,
                                         const point& other, const std::string& other_name) {
  auto s = paired_speedup(other.paired, base_name);
  if (!s) {
    const auto inverse = paired_speedup(base.paired, other_name);
    if (!inverse) return std::nullopt;
    s = std::array<double, 3>{1 / (*inverse)[0], 1 / (*inverse)[2], 1 / (*inverse)[1]};
  }
  comparison c;
  c.speedup = (*s)[0];
  if ((*s)[1] > 1) {
    c.verdict = "faster";
  } else if ((*s)[2] < 1) {
    c.verdict = "slower";
  }
  return c;
}

comparison compare_points(const point& base, const point& other) {
  double wb = 1, wo = 1;
  if (base.flops > 0 && other.flops > 0) {
    wb = base.flops;
    wo = other.flops;
  } else if (base.bytes > 0 && other.bytes > 0) {
    wb = base.bytes;
    wo = other.bytes;
  }
  const double scale = wb / wo;  // the other's time for the baseline's work, at its throughput
  comparison c;
  c.speedup = base.median / (other.median * scale);
  c.same_work = wb == wo;
  // Faster or slower only when the two medians' 95% intervals do not overlap; without both
  // intervals, neither.
  if (!base.interval || !other.interval) return c;
  const auto [base_low, base_high] = *base.interval;
  const auto [other_low, other_high] = *other.interval;
  if (other_high * scale < base_low) {
    c.verdict = "faster";
  } else if (other_low * scale > base_high) {
    c.verdict = "slower";
  }
  return c;
}

// The fields of a spec's kernel that sweep parameter `name` sets ("kernel.m", "kernel.grid[0]"):
// where it appears as a word in an expression (as the dashboard finds them).
std::vector<std::string> uses_of(const json& spec, const std::string& name) {
  std::vector<std::string> out;
  const auto is_word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  const auto uses = [&](const std::string& text) {
    for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
      const std::size_t end = at + name.size();
      if ((at == 0 || !is_word(text[at - 1])) && (end == text.size() || !is_word(text[end])))
        return true;
    }
    return false;
  };
  const std::function<void(const json&, const std::string&)> walk = [&](const json& v,
                                                                        const std::string& path) {
    if (v.is_string()) {
      if (path != "kernel.source" && path != "kernel.entry" && uses(v.get<std::string>()))
        out.push_back(path);
    } else if (v.is_array()) {
      for (std::size_t i = 0; i < v.size(); ++i)
        walk(v[i], path + "[" + std::to_string(i) + "]");
    } else if (v.is_object()) {
      for (const auto& [key, x] : v.items())
        if (key != "name" && key != "op") walk(x, path + "." + key);
    }
  };
  if (spec.is_object() && spec.contains("kernel")) walk(spec["kernel"], "kernel");
  return out;
}

std::string value_text(const json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// Why the series may not measure the same problem at a joined point: they run different ops, a
// field of the problem no sweep parameter sets differs, or a shared parameter sets different
// fields in them. Empty where they do, or a series has no spec (the variants of one job).
std::string join_warning(const std::vector<compare_series>& series,
                         const std::vector<std::string>& shared) {
  for (const auto& s : series)
    if (!s.spec.is_object()) return "";
  std::vector<std::string> why;
  std::set<std::string> ops;
  for (const auto& s : series)
    if (s.spec.contains("kernel") && s.spec["kernel"].is_object())
      ops.insert(s.spec["kernel"].value("op", "?"));
  if (ops.size() > 1) why.push_back("they run different ops (" + comma_joined(ops) + ")");
  // The fields that make the problem (not the implementation: impl, source, entry, launch) and
  // that no sweep parameter sets (a shared one joins the points; another one's best point stands
  // for the job, compared by throughput): different values measure different problems.
  std::set<std::string> swept;
  for (const auto& s : series) {
    if (!s.spec.contains("sweep") || !s.spec["sweep"].is_object()) continue;
    for (const auto& [n, values] : s.spec["sweep"].items())
      for (const auto& f : uses_of(s.spec, n))
        swept.insert(f);
  }
  auto differing = [&](const std::string& what, const std::function<std::string(const json&)>& of) {
    std::set<std::string> distinct;
    std::string line;
    for (const auto& s : series) {
      const std::string v = of(s.spec.contains("kernel") ? s.spec["kernel"] : json());
      distinct.insert(v);
      line += (line.empty() ? "" : "; ") + v + " in " + s.label;
    }
    if (distinct.size() > 1) why.push_back(what + " is " + line);
  };
  if (ops.size() == 1 && (*ops.begin() == "gemm" || *ops.begin() == "stream")) {
    for (const char* field :
         {"dtype", "m", "n", "k", "layout_a", "layout_b", "alpha", "beta", "variant", "scalar"}) {
      if (swept.count(std::string("kernel.") + field)) continue;
      differing(std::string("kernel.") + field, [&](const json& k) {
        return k.is_object() && k.contains(field) ? value_text(k[field]) : "the default";
      });
    }
  } else if (ops.size() == 1 && *ops.begin() == "custom") {
    // A custom kernel's element types: those of its buffer arguments (not local memory).
    differing("the element type of the buffers", [](const json& k) {
      std::set<std::string> types;
      if (k.is_object() && k.contains("args") && k["args"].is_array()) {
        for (const auto& a : k["args"]) {
          if (!a.is_object() || a.value("local", false)) continue;
          const std::string t = a.contains("type") && a["type"].is_string()
                                    ? a["type"].get<std::string>()
                                    : std::string();
          if (!t.empty() && t.back() == '*') types.insert(t.substr(0, t.size() - 1));
        }
      }
      return types.empty() ? std::string("none") : comma_joined(types);
    });
  }
  for (const auto& n : shared) {
    std::set<std::string> distinct;
    std::vector<std::string> each;
    for (const auto& s : series) {
      const std::string fields = comma_joined(uses_of(s.spec, n));
      distinct.insert(fields);
      each.push_back((fields.empty() ? "nothing" : fields) + " in " + s.label);
    }
    if (distinct.size() > 1) {
      std::string line = n + " sets ";
      for (std::size_t i = 0; i < each.size(); ++i)
        line += (i ? "; " : "") + each[i];
      why.push_back(line);
    }
  }
  if (why.empty()) return "";
  std::string out =
      "warning: matched on the parameter names only; these jobs may not measure the "
      "same problem at a matched point:\n";
  for (const auto& w : why)
    out += "  - " + w + "\n";
  return out;
}

std::string speedup_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*fx", v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2, v);
  return buf;
}

}  // namespace

std::vector<compare_series> series_of(const std::vector<std::pair<json, json>>& jobs) {
  std::vector<compare_series> out;
  if (jobs.size() == 1) {
    const auto& [job, rows] = jobs.front();
    std::map<std::string, std::size_t> at;
    for (const auto& r : rows) {
      if (!r.contains("variant") || !r["variant"].is_string()) continue;
      const std::string name = r["variant"].get<std::string>();
      if (!at.count(name)) {
        at[name] = out.size();
        out.push_back({name, json::array(), json()});
      }
      out[at[name]].rows.push_back(r);
    }
    if (out.size() < 2) {
      throw std::invalid_argument("job " + value_text(job.value("id", json())) +
                                  " has no variants to compare; name two or more jobs");
    }
    return out;
  }
  for (const auto& [job, rows] : jobs) {
    const std::string label = "job " + value_text(job.value("id", json()));
    if (std::any_of(out.begin(), out.end(), [&](const auto& s) { return s.label == label; }))
      throw std::invalid_argument("ID: " + label + " is named twice");
    out.push_back({label, rows, job.contains("spec") ? job["spec"] : json()});
  }
  return out;
}

std::string compare_report(const std::vector<compare_series>& series, const std::string& base,
                           std::optional<double> max_slowdown,
                           std::vector<std::string>* regressions) {
  std::vector<std::string> broken;  // what --max-slowdown fails on
  // The parameters every series has.
  std::vector<std::string> shared;
  for (const auto& s : series) {
    std::vector<std::string> names;
    for (const auto& r : s.rows) {
      if (r.contains("params") && r["params"].is_object()) {
        for (const auto& [name, v] : r["params"].items())
          names.push_back(name);
        break;
      }
    }
    if (&s == &series.front()) {
      shared = names;
    } else {
      std::erase_if(shared, [&](const std::string& n) {
        return std::find(names.begin(), names.end(), n) == names.end();
      });
    }
  }
  std::size_t base_at = 0;
  if (!base.empty()) {
    const auto it = std::find_if(series.begin(), series.end(),
                                 [&](const compare_series& s) { return s.label == base; });
    if (it == series.end()) {
      std::string labels;
      for (const auto& s : series)
        labels += (labels.empty() ? "" : ", ") + s.label;
      throw std::invalid_argument("--base " + base + ": not one of the compared (" + labels + ")");
    }
    base_at = std::size_t(it - series.begin());
  }

  // Per series: the best ok point at each shared key, the one of the highest throughput (the
  // least time per FLOP, else per byte, else the fastest; a smaller problem is not a better
  // point); keys in ascending order of their values (one job's sizes and another's interleave),
  // else in the order they first appear.
  std::vector<std::string> keys;
  std::map<std::string, std::vector<std::string>> key_values;
  std::vector<std::map<std::string, point>> best(series.size());
  std::vector<std::set<std::string>> failed(series.size());  // keys with only failed rows
  for (std::size_t i = 0; i < series.size(); ++i) {
    for (const auto& r : series[i].rows) {
      std::vector<std::string> values;
      std::string key;
      for (const auto& n : shared) {
        values.push_back(
            r.contains("params") && r["params"].contains(n) ? value_text(r["params"][n]) : "-");
        key += values.back() + "\x1f";
      }
      if (!key_values.count(key)) {
        key_values[key] = values;
        keys.push_back(key);
      }
      if (const auto p = point_of(r)) {
        auto [it, fresh] = best[i].emplace(key, *p);
        if (!fresh && better(*p, it->second)) it->second = *p;
      } else if (r.value("status", "") == "failed") {
        failed[i].insert(key);
      }
    }
    for (const auto& [key, p] : best[i])
      failed[i].erase(key);
  }

  std::map<std::string, std::vector<double>> key_numbers;
  for (const auto& [key, values] : key_values) {
    for (const auto& v : values) {
      double x = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (ec != std::errc() || end != v.data() + v.size()) break;
      key_numbers[key].push_back(x);
    }
    if (key_numbers[key].size() != values.size()) {
      key_numbers.clear();
      break;
    }
  }
  if (!key_numbers.empty()) {
    std::stable_sort(keys.begin(), keys.end(), [&](const std::string& a, const std::string& b) {
      return key_numbers[a] < key_numbers[b];
    });
  }

  // The baseline's column first, then each other series with its speedup over it.
  std::vector<std::size_t> order{base_at};
  for (std::size_t i = 0; i < series.size(); ++i)
    if (i != base_at) order.push_back(i);
  std::vector<text_table::column> columns;
  for (const auto& n : shared)
    columns.push_back({n, text_table::align::right});
  for (const std::size_t i : order) {
    columns.push_back({series[i].label + " µs", text_table::align::right});
    if (i != base_at) columns.push_back({"vs " + series[base_at].label, text_table::align::left});
  }
  text_table table(columns);
  std::vector<std::array<int, 4>> counts(series.size(), {0, 0, 0, 0});  // and voided
  std::vector<std::vector<double>> speedups(series.size());
  bool work_differs = false;
  int paired_count = 0, unpaired_count = 0;  // variants' speedups from paired ratios, or not
  for (const auto& key : keys) {
    std::vector<std::string> cells = key_values[key];
    // "job 6 at N=256, T=16: ", the start of a line of what --max-slowdown fails on.
    const auto at = [&](std::size_t i) {
      std::string text = series[i].label;
      for (std::size_t k = 0; k < shared.size(); ++k)
        text += (k ? ", " : " at ") + shared[k] + "=" + key_values[key][k];
      return text + ": ";
    };
    const auto b = best[base_at].find(key);
    for (const std::size_t i : order) {
      const auto p = best[i].find(key);
      std::string median = "-";
      if (p != best[i].end()) {
        median = format_significant(p->second.median, 4);
        if (const auto& ci = p->second.interval) {
          median += " ±" + format_significant(((*ci)[1] - (*ci)[0]) / 2, 2);
        }
        if (!p->second.voiding.empty()) median += " void: " + comma_joined(p->second.voiding);
      }
      cells.push_back(median);
      if (i == base_at) continue;
      if (p == best[i].end() || b == best[base_at].end()) {
        if (max_slowdown && b != best[base_at].end() && failed[i].count(key))
          broken.push_back(at(i) + "failed where " + series[base_at].label + " was measured");
        cells.push_back("-");
        continue;
      }
      std::optional<comparison> pc;
      if (series[i].spec.is_null() && series[base_at].spec.is_null()) {
        pc = compare_paired(b->second, series[base_at].label, p->second, series[i].label);
        paired_count += pc.has_value();
        unpaired_count += !pc;
      }
      const comparison c = pc ? *pc : compare_points(b->second, p->second);
      counts[i][c.verdict[0] == 'f' ? 0 : c.verdict[0] == 's' && c.verdict[1] == 'l' ? 1 : 2]++;
      counts[i][3] += !b->second.voiding.empty() || !p->second.voiding.empty();
      work_differs |= !c.same_work;
      speedups[i].push_back(c.speedup);
      cells.push_back(speedup_text(c.speedup) + " " + c.verdict + (c.same_work ? "" : " *"));
      if (!max_slowdown) continue;
      if (std::string_view(c.verdict) == "slower" && c.speedup < 1 - *max_slowdown) {
        const std::string change = resource_change(b->second, p->second);
        broken.push_back(at(i) + speedup_text(c.speedup) + " slower" +
                         (change.empty() ? "" : " (" + change + ")"));
      }
      if (!p->second.voiding.empty() && b->second.voiding.empty()) {
        broken.push_back(at(i) + "flags that void its score (" + comma_joined(p->second.voiding) +
                         ") where " + series[base_at].label + "'s are sound");
      }
    }
    table.add_row(std::move(cells));
  }
  bool any = false;
  for (std::size_t i = 0; i < series.size(); ++i)
    any |= !speedups[i].empty();
  if (!any) {
    std::vector<std::string> labels;
    for (const auto& s : series)
      labels.push_back(s.label);
    throw nothing_to_compare("no measured point is shared by " + comma_joined(labels) +
                             " (shared parameters: " +
                             (shared.empty() ? std::string("none") : comma_joined(shared)) + ")");
  }

  std::string out = "baseline  " + series[base_at].label + "\n";
  out += "joined on ";
  if (shared.empty()) {
    out += "nothing: each one's best point";
  } else {
    for (std::size_t i = 0; i < shared.size(); ++i)
      out += (i ? ", " : "") + shared[i];
  }
  out += "\n";
  if (shared.empty()) {
    out +=
        "warning: these share no sweep parameter: each one's best point stands for it, so the "
        "speedup compares different problems, by throughput (time per FLOP, else per byte)\n";
  }
  out += join_warning(series, shared) + "\n" + table.render() + "\n";
  if (paired_count) {
    out += unpaired_count
               ? "speedups are the median of the paired ratios of the variants' interleaved "
                 "samples where one was measured against the other (the baseline, or the "
                 "point's slowest), else the ratio of the medians (" +
                     counted(unpaired_count, "pair") + ")\n"
               : "speedups are the median of the paired ratios of the variants' interleaved "
                 "samples, faster or slower where their 95% interval leaves out 1\n";
  }
  if (work_differs) {
    out +=
        "* the two points do different work (another problem size): the speedup is of "
        "throughput, time per FLOP, else per byte\n";
  }
  for (const std::size_t i : order) {
    if (i == base_at || speedups[i].empty()) continue;
    double log_sum = 0;
    for (double s : speedups[i])
      log_sum += std::log(s);
    const double mean = std::exp(log_sum / double(speedups[i].size()));
    out += series[i].label + ": " + speedup_text(mean) + " the speed of " + series[base_at].label +
           " (geometric mean over " + counted(static_cast<long long>(speedups[i].size()), "point") +
           "): " + std::to_string(counts[i][0]) + " faster, " + std::to_string(counts[i][1]) +
           " slower, " + std::to_string(counts[i][2]) + " the same" +
           (counts[i][3] ? "; " + std::to_string(counts[i][3]) +
                               " of them with a point whose flags void its score (void:)"
                         : std::string()) +
           "\n";
    if (max_slowdown && mean < 1 - *max_slowdown) {
      broken.push_back(series[i].label + ": " + speedup_text(mean) + " the speed of " +
                       series[base_at].label + " (geometric mean)");
    }
  }
  if (max_slowdown && regressions) *regressions = std::move(broken);
  return out;
}

}  // namespace kernelscan

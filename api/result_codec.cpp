#include "api/result_codec.hpp"

#include <array>
#include <cmath>
#include <cstdio>

namespace kernelscan {
namespace {

// Columns after the sweep parameters: (header, JSON pointer into the row).
constexpr std::array<std::pair<std::string_view, std::string_view>, 34> k_columns{{
    {"index", "/index"},
    {"status", "/status"},
    {"error_type", "/error/type"},
    {"median_us", "/time_us/median"},
    {"mean_us", "/time_us/mean"},
    {"min_us", "/time_us/min"},
    {"max_us", "/time_us/max"},
    {"stddev_us", "/time_us/stddev"},
    {"p5_us", "/time_us/p5"},
    {"p95_us", "/time_us/p95"},
    {"p99_us", "/time_us/p99"},
    {"ci95_low_us", "/time_us/ci95_low"},
    {"ci95_high_us", "/time_us/ci95_high"},
    {"rel_noise", "/time_us/rel_noise"},
    {"samples", "/samples"},
    {"converged", "/converged"},
    {"l2", "/l2"},
    {"tflops", "/metrics/tflops"},
    {"gbps", "/metrics/gbps"},
    {"arithmetic_intensity", "/metrics/arithmetic_intensity"},
    {"roof_pct", "/metrics/roof_pct"},
    {"bound", "/metrics/bound"},
    {"verification", "/verification/status"},
    {"flags", "/flags"},
    {"correct", "/fitness/correct"},
    {"speedup", "/fitness/speedup"},
    {"latency_score", "/fitness/latency_score"},
    {"combined_score", "/fitness/combined_score"},
    {"name", "/name"},  // imported points' kernel names; after the older columns, which keep
                        // their place
    {"simulated", "/simulated"},
    // A user kernel's resources, where its platform tells them (empty otherwise).
    {"registers", "/resources/registers"},
    {"shared_bytes", "/resources/shared_bytes"},
    {"local_bytes", "/resources/local_bytes"},
    {"occupancy", "/resources/occupancy"},
}};

// Columns a job with variants adds after them.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> k_variant_columns{{
    {"variant", "/variant"},
    {"speedup_over_slowest", "/comparison/over_slowest/speedup"},
    {"slowest", "/comparison/over_slowest/variant"},
    {"speedup_over_baseline", "/comparison/over_baseline/speedup"},
    {"speedup_over_baseline_ci95_low", "/comparison/over_baseline/ci95/0"},
    {"speedup_over_baseline_ci95_high", "/comparison/over_baseline/ci95/1"},
}};

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return csv_quote(v.get<std::string>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_array()) {
    std::string joined;
    for (const auto& x : v)
      joined += (joined.empty() ? "" : ";") + (x.is_string() ? x.get<std::string>() : x.dump());
    return csv_quote(joined);
  }
  if (v.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v.get<double>());
    return buf;
  }
  return v.dump();
}

json or_null(const std::optional<double>& v) {
  return v ? json(*v) : json(nullptr);
}

json summary_json(const time_summary& t) {
  return {{"mean", t.mean},
          {"median", t.median},
          {"min", t.min},
          {"max", t.max},
          {"stddev", t.stddev},
          {"p5", t.p5},
          {"p95", t.p95},
          {"p99", t.p99},
          {"ci95_low", or_null(t.ci95_low)},
          {"ci95_high", or_null(t.ci95_high)},
          {"rel_noise", or_null(t.rel_noise)}};
}

// An imported point's statistics: only those its source gave or its data allowed computing.
json stats_json(const imported_stats& t) {
  json j = json::object();
  const std::pair<const char*, const std::optional<double>*> fields[] = {
      {"mean", &t.mean},
      {"median", &t.median},
      {"min", &t.min},
      {"max", &t.max},
      {"stddev", &t.stddev},
      {"p5", &t.p5},
      {"p95", &t.p95},
      {"p99", &t.p99},
      {"ci95_low", &t.ci95_low},
      {"ci95_high", &t.ci95_high},
      {"rel_noise", &t.rel_noise}};
  for (const auto& [key, value] : fields) {
    if (*value) j[key] = **value;
  }
  return j;
}

}  // namespace

json params_json(const std::vector<std::pair<std::string, std::int64_t>>& params) {
  json p = json::object();
  for (const auto& [k, v] : params)
    p[k] = v;
  return p;
}

json to_json(const point_result& r) {
  // An imported point (r.origin) has the same row, with what kernelscan did not measure null or
  // left out rather than filled in: the source's statistics, no sampling state, and no roof
  // without a device model.
  const point_origin* imported = r.origin ? &*r.origin : nullptr;
  json j;
  j["index"] = r.index;
  j["params"] = params_json(r.params);
  if (r.variant) j["variant"] = *r.variant;
  if (!r.name.empty()) j["name"] = r.name;
  j["status"] = to_string(r.status);
  if (r.error) j["error"] = {{"type", r.error->type}, {"message", r.error->message}};
  j["simulated"] = r.simulated;
  if (imported) {
    j["time_us"] = stats_json(imported->time_us);
    j["samples"] = imported->calls ? json(*imported->calls) : json(nullptr);
    j["discarded_samples"] = nullptr;
    j["converged"] = nullptr;
    j["stop_reason"] = "imported";
    j["sampling_ms"] = imported->total_us ? json(*imported->total_us / 1e3) : json(nullptr);
    j["batch"] = r.batch;
    j["l2"] = nullptr;
  } else {
    j["time_us"] = r.time_us ? summary_json(*r.time_us) : json(nullptr);
    j["samples"] = r.samples;
    j["discarded_samples"] = r.discarded;
    j["converged"] = r.converged;
    j["stop_reason"] = r.stop_reason.empty() ? json(nullptr) : json(r.stop_reason);
    j["sampling_ms"] = r.sampling_ms;
    j["batch"] = r.batch;
    j["batch_correction"] = nullptr;
    if (const auto& c = r.batch_corrected) {
      j["batch_correction"] = {
          {"free_batch", c->free_batch}, {"fixed_cost_us", c->fixed_cost_us}, {"us", c->us}};
    }
    j["l2"] = to_string(r.l2);
  }
  if (r.metrics) {
    const auto& m = *r.metrics;
    j["metrics"] = {{"flops", m.flops},
                    {"bytes", m.bytes},
                    {"tflops", m.tflops},
                    {"gbps", m.gbps},
                    {"arithmetic_intensity", m.arithmetic_intensity}};
    if (!imported || imported->roofline) {
      j["metrics"]["roof_tflops"] = m.roof_tflops;
      j["metrics"]["roof_pct"] = m.roof_pct;
      j["metrics"]["bound"] = m.bound;
      j["metrics"]["roof_source"] = m.roof_source;
    }
  } else {
    j["metrics"] = nullptr;
  }
  if (const auto& k = r.resources) {
    json res = json::object();
    if (k->registers) res["registers"] = *k->registers;
    if (k->shared_bytes) res["shared_bytes"] = *k->shared_bytes;
    if (k->local_bytes) res["local_bytes"] = *k->local_bytes;
    if (k->max_block_threads) res["max_block_threads"] = *k->max_block_threads;
    if (k->block_multiple) res["block_multiple"] = *k->block_multiple;
    if (k->blocks_per_unit) res["blocks_per_unit"] = *k->blocks_per_unit;
    if (k->occupancy) res["occupancy"] = *k->occupancy;
    if (!k->limited_by.empty()) res["limited_by"] = k->limited_by;
    j["resources"] = std::move(res);
  }
  const auto& v = r.verification;
  j["verification"] = {{"status", v.status},           {"trials", v.trials},
                       {"max_abs_err", v.max_abs_err}, {"max_rel_err", v.max_rel_err},
                       {"unwritten", v.unwritten},     {"tolerance", v.tolerance}};
  if (!v.note.empty()) j["verification"]["note"] = v.note;
  if (v.launch_us) j["verification"]["launch_us"] = *v.launch_us;
  if (v.timed_checks > 0) {
    j["verification"]["timed_checks"] = v.timed_checks;
    j["verification"]["timed_wrong"] = v.timed_wrong;
  }
  if (!v.inputs_written.empty()) j["verification"]["inputs_written"] = v.inputs_written;
  if (v.status != "skipped") {
    j["verification"]["launches"] = v.launches;
    j["verification"]["norm_rel_err"] = v.norm_rel_err;  // infinity is written as null
    j["verification"]["ref_near_zero"] = v.ref_near_zero;
    j["verification"]["ref_not_finite"] = v.ref_not_finite;
  }
  if (v.timed_failed > 0) j["verification"]["timed_failed"] = v.timed_failed;
  if (v.batch_probes > 0) j["verification"]["batch_probes"] = v.batch_probes;
  if (v.split_samples > 0) j["verification"]["split_samples"] = v.split_samples;
  if (v.launch_spread) j["verification"]["launch_spread"] = *v.launch_spread;
  if (v.launch_excess_us) j["verification"]["launch_excess_us"] = *v.launch_excess_us;
  if (v.builtin_excess_us) j["verification"]["builtin_excess_us"] = *v.builtin_excess_us;
  if (!v.written_out_of_bounds.empty())
    j["verification"]["written_out_of_bounds"] = v.written_out_of_bounds;
  j["flags"] = r.flags;
  j["advice"] = r.advice;
  const auto& f = r.fitness;
  j["fitness"] = {
      {"correct", f.correct},
      {"speedup", or_null(f.speedup)},
      {"speedup_ci95", f.speedup_ci95 ? json::array({f.speedup_ci95->first, f.speedup_ci95->second})
                                      : json(nullptr)},
      {"baseline_us", or_null(f.baseline_us)},
      {"latency_score", or_null(f.latency_score)},
      {"combined_score", f.combined_score}};
  if (r.variant) {
    auto speedup = [](const std::optional<variant_speedup>& e) {
      if (!e) return json(nullptr);
      return json{{"variant", e->over},
                  {"speedup", e->speedup},
                  {"ci95", e->ci95_low && e->ci95_high ? json::array({*e->ci95_low, *e->ci95_high})
                                                       : json(nullptr)}};
    };
    j["comparison"] = r.comparison ? json{{"over_slowest", speedup(r.comparison->over_slowest)},
                                          {"over_baseline", speedup(r.comparison->over_baseline)}}
                                   : json(nullptr);
  }
  if (imported) {
    j["fitness"] = nullptr;  // not measured here: nothing to score
    j["environment"] = {
        {"device", r.environment.device.empty() ? json(nullptr) : json(r.environment.device)}};
    json origin = {{"format", imported->format}};
    if (!imported->type.empty()) origin["type"] = imported->type;
    origin["total_us"] = or_null(imported->total_us);
    origin["time_pct"] = or_null(imported->time_pct);
    origin["notes"] = imported->notes;
    j["import"] = std::move(origin);
    return j;
  }
  json env = {{"device", r.environment.device},
              {"driver", r.environment.driver},
              {"clock_mhz", r.environment.clock_mhz}};
  if (r.environment.temperature_c) env["temperature_c"] = *r.environment.temperature_c;
  if (r.environment.power_w) env["power_w"] = *r.environment.power_w;
  j["environment"] = std::move(env);
  return j;
}

std::string csv_header(const std::vector<std::string>& param_names, bool variants) {
  std::string out;
  for (const auto& p : param_names)
    out += csv_quote(p) + ",";
  for (std::size_t i = 0; i < k_columns.size(); ++i) {
    out += (i ? "," : "") + std::string(k_columns[i].first);
  }
  if (variants) {
    for (const auto& [name, pointer] : k_variant_columns)
      out += "," + std::string(name);
  }
  return out + "\r\n";
}

std::string csv_line(const json& row, const std::vector<std::string>& param_names, bool variants) {
  std::string out;
  const json* params = row.contains("params") ? &row["params"] : nullptr;
  for (const auto& p : param_names) {
    if (params && params->contains(p)) out += csv_cell((*params)[p]);
    out += ",";
  }
  auto cell = [&](std::string_view pointer) {
    const json::json_pointer ptr{std::string(pointer)};
    if (row.contains(ptr)) out += csv_cell(row[ptr]);
  };
  for (std::size_t i = 0; i < k_columns.size(); ++i) {
    if (i) out += ",";
    cell(k_columns[i].second);
  }
  if (variants) {
    for (const auto& [name, pointer] : k_variant_columns) {
      out += ",";
      cell(pointer);
    }
  }
  return out + "\r\n";
}

scored_point score_of(const json& row) {
  scored_point p;
  p.ok = row.is_object() && row.value("status", "") == "ok";
  if (!row.is_object()) return p;
  const auto f = row.find("fitness");
  if (f == row.end() || !f->is_object()) return p;
  auto number = [&](const char* key) -> std::optional<double> {
    const auto it = f->find(key);
    if (it == f->end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  const auto correct = f->find("correct");
  p.correct = correct != f->end() && correct->is_boolean() && correct->get<bool>();
  p.combined_score = number("combined_score").value_or(0.0);
  p.speedup = number("speedup");
  p.latency_score = number("latency_score");
  return p;
}

std::optional<double> cost_of(const json& row) {
  if (!row.is_object() || row.value("status", "") != "ok") return std::nullopt;
  const json* time = row.contains("time_us") ? &row["time_us"] : nullptr;
  if (!time || !time->is_object() || !time->contains("median")) return std::nullopt;
  const json& median = (*time)["median"];
  if (!median.is_number()) return std::nullopt;
  double work = 1;
  if (const auto m = row.find("metrics"); m != row.end() && m->is_object()) {
    const auto positive = [&](const char* key) {
      const auto it = m->find(key);
      return it != m->end() && it->is_number() && it->get<double>() > 0 ? it->get<double>() : 0.0;
    };
    if (const double flops = positive("flops"); flops > 0) {
      work = flops;
    } else if (const double bytes = positive("bytes"); bytes > 0) {
      work = bytes;
    }
  }
  return median.get<double>() / work;
}

std::vector<std::string> flags_of(const json& row) {
  std::vector<std::string> out;
  if (!row.is_object()) return out;
  const auto f = row.find("flags");
  if (f == row.end() || !f->is_array()) return out;
  for (const auto& flag : *f) {
    if (flag.is_string()) out.push_back(flag.get<std::string>());
  }
  return out;
}

}  // namespace kernelscan

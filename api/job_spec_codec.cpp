#include "api/job_spec_codec.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "api/detail/object_reader.hpp"
#include "engine/detail/overloaded.hpp"
#include "engine/device_catalog.hpp"
#include "engine/expression.hpp"
#include "engine/source_policy.hpp"

namespace kernelscan {
namespace {

using detail::index_path;
using detail::join_path;
using detail::json_type_name;
using detail::object_reader;
using detail::overloaded;

constexpr std::int64_t k_max_literal = 9007199254740992;  // 2^53: exact in a double

// A custom kernel's `language`, by name.
constexpr std::pair<std::string_view, kernel_language> k_languages[] = {
    {"hip", kernel_language::hip},
    {"cuda", kernel_language::cuda},
    {"opencl", kernel_language::opencl}};

// A spec's placement as written back: "any", a bare index, or the object.
json placement_json(const job_spec& spec) {
  if (!spec.device_node && !spec.device_model) {
    return spec.device ? json(*spec.device) : json("any");
  }
  json j = json::object();
  if (spec.device_node) j["node"] = *spec.device_node;
  if (spec.device) j["index"] = *spec.device;
  if (spec.device_model) j["model"] = *spec.device_model;
  return j;
}

// A node's name as --node takes it: 1 to 253 letters, digits, '-', '_', '.' (a Kubernetes node
// name fits).
bool node_name(const std::string& s) {
  return !s.empty() && s.size() <= 253 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// `device` as an object: {"node": N, "index": I}, {"model": M}, {"node": N}, ... (DESIGN.md §7).
void parse_placement(const json& v, job_spec& spec, std::vector<field_error>& errors) {
  const std::size_t before = errors.size();
  object_reader r(v, "device", errors);
  if (auto node = r.string("node", 253)) {
    if (node_name(*node)) {
      spec.device_node = *node;
    } else {
      r.error("node", "\"" + *node + "\" is not a node name (letters, digits, '-', '_', '.')");
    }
  }
  if (auto index = r.integer("index", 0, 1023)) spec.device = int(*index);
  if (auto model = r.string("model", 64)) {
    if (find_device_model(*model)) {
      spec.device_model = *model;
    } else {
      std::string known;
      for (const auto& m : device_catalog())
        known += (known.empty() ? "" : ", ") + std::string(m.key);
      r.error("model", "\"" + *model + "\" is not a catalog model (" + known + ")");
    }
  }
  r.finish();
  if (errors.size() == before && !spec.device && !spec.device_node && !spec.device_model) {
    errors.push_back({"device",
                      "names no device: give \"node\", \"index\" or \"model\", or "
                      "use \"any\""});
  }
}

class spec_parser {
 public:
  explicit spec_parser(const spec_limits& limits) : m_limits(limits) {}

  job_spec parse(const json& body) {
    job_spec spec;
    object_reader r(body, "", m_errors);
    if (!r.ok()) throw validation_error(std::move(m_errors));
    // The sweep's names, for checking expressions as they are read. Only when they can be read
    // at all: against a broken sweep every expression would seem to use unknown names.
    if (const auto it = body.find("sweep"); it == body.end()) {
      m_names.emplace();
    } else if (it->is_object()) {
      m_names.emplace();
      for (const auto& [name, values] : it->items()) {
        if (is_identifier(name) && !is_reserved_name(name)) m_names->push_back(name);
      }
    }

    const json* kernel = r.get("kernel");
    const json* variants = r.get("variants");
    std::string op_default = "job";
    if (variants) {
      spec.variants = parse_variants(*variants, kernel);
      if (!spec.variants.empty()) {
        spec.kernel = spec.variants.front().kernel;
        op_default = std::string(op_name(spec.kernel)) + " variants";
      }
    } else if (!kernel) {
      r.error("kernel", "is required");
    } else {
      if (auto k = parse_kernel(*kernel, "kernel")) {
        spec.kernel = std::move(*k);
        op_default = std::string(op_name(spec.kernel)) + " sweep";
      }
    }
    if (auto baseline = r.string("baseline", 64)) {
      if (!variants) {
        r.error("baseline",
                "names the variant the others are compared with; give \"variants\", or a "
                "baseline kernel as fitness.baseline");
      } else if (!spec.variants.empty()) {
        const bool known =
            std::any_of(spec.variants.begin(), spec.variants.end(),
                        [&](const kernel_variant& v) { return v.name == *baseline; });
        if (known) {
          spec.baseline_variant = *baseline;
        } else {
          std::string names;
          for (const auto& v : spec.variants)
            names += (names.empty() ? "" : ", ") + v.name;
          r.error("baseline", "\"" + *baseline + "\" is not a variant (" + names + ")");
        }
      }
    }
    spec.name = r.string("name", 200).value_or(op_default);
    if (const json* labels = r.get("labels")) spec.labels = parse_labels(*labels, "labels");
    // The label that lists a task's jobs (?task=) and marks them in label filters is the
    // daemon's, so that no plain job passes for one of them.
    if (!m_limits.task_job && spec.labels.count("task")) {
      r.error("labels.task",
              "is the daemon's: it labels the jobs of an evaluation task's submissions "
              "(POST /api/v1/tasks/{name}/submissions)");
    }
    spec.engine = r.choice<engine_kind>("engine", {{"auto", engine_kind::any},
                                                   {"mock", engine_kind::mock},
                                                   {"hip", engine_kind::hip},
                                                   {"opencl", engine_kind::opencl}})
                      .value_or(engine_kind::any);
    if (const json* device = r.get("device")) {
      if (device->is_string() && device->get<std::string>() == "any") {
        spec.device.reset();
      } else if (device->is_number_integer() && device->get<std::int64_t>() >= 0 &&
                 device->get<std::int64_t>() < 1024) {
        spec.device = int(device->get<std::int64_t>());
      } else if (device->is_object()) {
        parse_placement(*device, spec, m_errors);
      } else {
        r.error("device",
                "must be \"any\" or a device index (0, 1, ...), or an object of \"node\", "
                "\"index\" and \"model\", not " +
                    device->dump());
      }
    }
    spec.priority = int(r.integer("priority", -1000, 1000).value_or(0));
    {
      const json* sweep = r.get("sweep");
      const json* held_out = r.get("held_out");
      if (sweep || held_out) spec.sweep = parse_sweep(sweep, held_out);
      if (r.get("held_out_scores")) {
        const auto hidden =
            r.choice<bool>("held_out_scores", {{"shown", false}, {"private", true}});
        if (hidden && *hidden && !m_limits.task_job) {
          error("held_out_scores",
                "only an evaluation task's jobs have held-out points: an operator defines them "
                "with POST /api/v1/tasks");
        } else if (hidden && *hidden && m_errors.empty() && spec.sweep.held_out().empty()) {
          error("held_out_scores",
                "is \"private\" without held-out points: give \"held_out\" the sizes whose "
                "scores only an operator sees");
        }
        spec.private_held_out_scores = hidden.value_or(false);
      }
    }
    if (const json* timing = r.get("timing")) spec.timing = parse_timing(*timing);
    if (const json* verify = r.get("verify")) spec.verify = parse_verify(*verify);
    if (const json* fitness = r.get("fitness")) spec.fitness = parse_fitness(*fitness);
    if (variants && spec.fitness.baseline) {
      error("fitness.baseline",
            "a job with variants is compared with one of them: name it in \"baseline\" (each "
            "variant's speedup and fitness are then over that variant)");
    }
    if (auto cache = r.boolean("cache")) spec.cache = *cache;
    if (const json* mock = r.get("mock")) spec.mock = parse_mock(*mock);
    if (auto seed = r.integer("seed", 0, std::numeric_limits<std::int64_t>::max())) {
      spec.seed = std::uint64_t(*seed);
    }
    r.finish();
    if (spec.variants.size() > 1 && spec.sweep.size() != UINT64_MAX &&
        spec.sweep.size() <= m_limits.max_points &&
        spec.sweep.size() > m_limits.max_points / spec.variants.size()) {
      error("variants", "measures " + std::to_string(spec.variants.size()) +
                            " variants at each of " + std::to_string(spec.sweep.size()) +
                            " points, " + std::to_string(spec.variants.size() * spec.sweep.size()) +
                            " measurements; the limit is " + std::to_string(m_limits.max_points));
    }
    if (m_limits.require_used_parameters && m_names) {
      for (const auto& p : spec.sweep.parameters()) {
        if (m_used.count(p.name)) continue;
        error(join_path("sweep", p.name),
              "no field uses " + p.name +
                  ", so every point would measure the same kernel; use it in an integer "
                  "field (\"m\": \"" +
                  p.name + "\"), an expression (\"ceil(" + p.name +
                  "/16)\") or a compile option (\"-DTILE=" + p.name + "\"), or remove it");
      }
    }
    if (!m_errors.empty()) throw validation_error(std::move(m_errors));
    return spec;
  }

 private:
  const spec_limits& m_limits;
  std::vector<field_error> m_errors;
  std::optional<std::vector<std::string>> m_names;  // the sweep's parameters, when readable
  std::set<std::string> m_used;                     // parameters some field refers to

  // Compiles an expression over the sweep's parameters: reports what does not compile (every
  // unknown name) with the field, and notes the parameters it uses.
  bool check_expression(const std::string& text, const std::string& field) {
    if (!m_names) return true;
    try {
      const expression e(text, *m_names);
      for (auto& name : e.used_parameters())
        m_used.insert(std::move(name));
      return true;
    } catch (const expression_error& x) {
      error(field, x.what());
      return false;
    }
  }

  void error(std::string field, std::string message) {
    m_errors.push_back({std::move(field), std::move(message)});
  }

  std::map<std::string, std::string> parse_labels(const json& v, const std::string& path) {
    return detail::read_labels(v, path, m_limits.max_labels, m_errors);
  }

  // A JSON float holding a whole number within +-2^53 (1e6, 1024.0), as integer fields accept.
  // A JSON number that is a whole number within +-2^53 (1024, 1e6, 1024.0): what integer
  // fields and sweep values take.
  static std::optional<std::int64_t> exact_integer(const json& v) {
    if (v.is_number_unsigned()) {
      const auto u = v.get<std::uint64_t>();
      if (u <= std::uint64_t(k_max_literal)) return std::int64_t(u);
    } else if (v.is_number_integer()) {
      const auto i = v.get<std::int64_t>();
      if (i >= -k_max_literal && i <= k_max_literal) return i;
    } else if (v.is_number_float()) {
      const double d = v.get<double>();
      if (std::isfinite(d) && d == std::nearbyint(d) && std::fabs(d) <= double(k_max_literal)) {
        return std::int64_t(d);
      }
    }
    return std::nullopt;
  }

  std::optional<std::int64_t> sweep_value(const json& v, const std::string& field) {
    if (const auto x = exact_integer(v)) return x;
    error(field, "must be an integer within +-2^53, not " +
                     (v.is_number() ? v.dump() : std::string(json_type_name(v))));
    return std::nullopt;
  }

  std::vector<std::int64_t> parse_range(const json& v, const std::string& field) {
    std::vector<std::int64_t> out;
    object_reader r(v, field, m_errors);
    auto from = r.integer("from", -k_max_literal, k_max_literal, true);
    auto to = r.integer("to", -k_max_literal, k_max_literal, true);
    auto step = r.integer("step", 1, k_max_literal);
    auto mul = r.integer("mul", 2, 1024);
    r.finish();
    if (!from || !to) return out;
    if (step && mul) {
      r.error("mul", "give either step or mul, not both");
      return out;
    }
    if (*to < *from) {
      r.error("to", "is less than from (" + std::to_string(*from) + ")");
      return out;
    }
    const std::size_t cap = m_limits.max_values_per_parameter;
    if (mul) {
      if (*from <= 0) {
        r.error("from", "must be positive for a geometric range (mul)");
        return out;
      }
      for (std::int64_t x = *from; x <= *to; x *= *mul) {
        out.push_back(x);
        if (out.size() > cap || x > k_max_literal / *mul) break;
      }
    } else {
      const std::int64_t s = step.value_or(1);
      for (std::int64_t x = *from; x <= *to; x += s) {
        out.push_back(x);
        if (out.size() > cap || x > k_max_literal - s) break;
      }
    }
    return out;
  }

  // The parameters of `sweep` or `held_out` (`path`); `ok` false when any was invalid.
  std::vector<sweep_parameter> parse_parameters(const json& v, const std::string& path, bool& ok) {
    ok = false;
    if (!v.is_object()) {
      error(path, "must be an object mapping parameter names to value lists, not " +
                      std::string(json_type_name(v)));
      return {};
    }
    if (v.size() > m_limits.max_sweep_parameters) {
      error(path, "has " + std::to_string(v.size()) + " parameters; the limit is " +
                      std::to_string(m_limits.max_sweep_parameters));
      return {};
    }
    std::vector<sweep_parameter> params;
    ok = true;
    for (const auto& [name, values] : v.items()) {
      const std::string field = join_path(path, name);
      if (!is_identifier(name)) {
        // An empty name has no field of its own: the sweep is named.
        error(name.empty() ? path : field,
              std::string(name.empty() ? "has a parameter without a name: " : "") +
                  "parameter names are identifiers: a letter or '_', then letters, digits or "
                  "'_' (at most 64)");
        ok = false;
        continue;
      }
      if (is_reserved_name(name)) {
        error(field, "\"" + name + "\" is reserved for expression functions and constants");
        ok = false;
        continue;
      }
      sweep_parameter p{name, {}};
      if (values.is_array()) {
        if (values.size() > m_limits.max_values_per_parameter) {
          error(field, "has " + std::to_string(values.size()) + " values; the limit is " +
                           std::to_string(m_limits.max_values_per_parameter));
          ok = false;
          continue;
        }
        for (std::size_t i = 0; i < values.size(); ++i) {
          if (auto x = sweep_value(values[i], index_path(field, i)))
            p.values.push_back(*x);
          else
            ok = false;
        }
      } else if (values.is_object()) {
        p.values = parse_range(values, field);
        if (p.values.size() > m_limits.max_values_per_parameter) {
          error(field, "expands to more than " + std::to_string(m_limits.max_values_per_parameter) +
                           " values");
          ok = false;
          continue;
        }
      } else {
        error(field,
              "must be a list of integers or a range {\"from\", \"to\", \"step\" | "
              "\"mul\"}, not " +
                  std::string(json_type_name(values)));
        ok = false;
        continue;
      }
      if (p.values.empty()) {
        // (A list whose values were all refused has said so for each.)
        if (values.is_array() && values.empty()) error(field, "has no values");
        ok = false;
        continue;
      }
      std::set<std::int64_t> seen;
      for (auto x : p.values) {
        if (!seen.insert(x).second) {
          error(field, "lists " + std::to_string(x) + " twice");
          ok = false;
          break;
        }
      }
      params.push_back(std::move(p));
    }
    return params;
  }

  // The sweep, with the held-out points of an evaluation task's job when `held_out` is given:
  // the same parameters, other values.
  kernelscan::sweep parse_sweep(const json* v, const json* held_out) {
    if (held_out && held_out->is_object() && held_out->empty()) held_out = nullptr;  // none
    bool ok = true;
    std::vector<sweep_parameter> params;
    if (v) params = parse_parameters(*v, "sweep", ok);
    std::vector<sweep_parameter> held;
    if (held_out && !m_limits.task_job) {
      error("held_out",
            "only an evaluation task's jobs have held-out points: an operator defines them with "
            "POST /api/v1/tasks");
      ok = false;
    } else if (held_out) {
      bool held_ok = true;
      auto given = parse_parameters(*held_out, "held_out", held_ok);
      if (held_ok && ok) {
        // In the sweep's order, so that a point's values line up with its names.
        for (const auto& p : params) {
          const auto it = std::find_if(given.begin(), given.end(),
                                       [&](const sweep_parameter& g) { return g.name == p.name; });
          if (it == given.end()) {
            error("held_out", "has no values for sweep parameter " + p.name +
                                  " (held-out points give every parameter of the sweep)");
            held_ok = false;
          } else {
            held.push_back(std::move(*it));
            given.erase(it);
          }
        }
        for (const auto& g : given) {
          error(join_path("held_out", g.name), "is not a parameter of the sweep");
          held_ok = false;
        }
        if (params.empty() && held_ok) {
          error("held_out", "needs a sweep: held-out points are other values of its parameters");
          held_ok = false;
        }
      }
      ok = ok && held_ok;
      if (!held_ok) held.clear();
    }
    // A held-out point that is also a public one is not held out: its time and correctness are
    // shown to the candidate. One exists where every parameter's held-out values share one with
    // its public values.
    if (ok && !held.empty()) {
      std::string shared;
      for (std::size_t i = 0; i < held.size(); ++i) {
        const auto& pub = params[i].values;
        const auto it =
            std::find_if(held[i].values.begin(), held[i].values.end(), [&](std::int64_t value) {
              return std::find(pub.begin(), pub.end(), value) != pub.end();
            });
        if (it == held[i].values.end()) {
          shared.clear();
          break;
        }
        shared += (i ? ", " : "") + held[i].name + "=" + std::to_string(*it);
      }
      if (!shared.empty()) {
        error("held_out", "has the point (" + shared +
                              ") of the public sweep too: a held-out point is one the candidate "
                              "never sees, with other values");
        ok = false;
      }
    }
    kernelscan::sweep s(std::move(params), std::move(held));
    if (ok && s.size() > m_limits.max_points) {
      error("sweep",
            "has " + (s.size() == UINT64_MAX ? std::string("too many") : std::to_string(s.size())) +
                " points; the limit is " + std::to_string(m_limits.max_points));
    }
    return s;
  }

  timing_options parse_timing(const json& v) {
    timing_options t;
    object_reader r(v, "timing", m_errors);
    const double max_ms = m_limits.max_point_time_ms;
    if (auto l2 = r.choice<l2_mode>("l2", {{"cold", l2_mode::cold}, {"hot", l2_mode::hot}}))
      t.l2 = *l2;
    if (auto x = r.integer("warmup", 0, 10000)) t.warmup = int(*x);
    if (auto x = r.integer("min_samples", 1, 1000000)) t.min_samples = int(*x);
    if (auto x = r.integer("max_samples", 1, 1000000)) t.max_samples = int(*x);
    if (auto x = r.number("min_time_ms", 0, max_ms)) t.min_time_ms = *x;
    if (auto x = r.number("max_time_ms", 0.001, max_ms)) t.max_time_ms = *x;
    if (auto x = r.number("target_rel_noise", 1e-6, 1)) t.target_rel_noise = *x;
    r.finish();
    if (t.max_samples < t.min_samples) {
      r.error("max_samples", "is less than min_samples (" + std::to_string(t.min_samples) + ")");
    }
    if (t.max_time_ms < t.min_time_ms) {
      r.error("max_time_ms", "is less than min_time_ms");
    }
    return t;
  }

  verify_options parse_verify(const json& v) {
    verify_options out;
    object_reader r(v, "verify", m_errors);
    if (auto x = r.integer("trials", 0, 100)) out.trials = int(*x);
    out.atol = r.number("atol", 0, 1e30);
    out.rtol = r.number("rtol", 0, 1e30);
    r.finish();
    return out;
  }

  fitness_options parse_fitness(const json& v) {
    fitness_options out;
    object_reader r(v, "fitness", m_errors);
    if (!r.ok()) return out;
    if (const json* baseline = r.get("baseline")) {
      out.baseline = parse_kernel(*baseline, "fitness.baseline");
    }
    if (auto t = r.number("target_us", 0, 1e12)) {
      if (*t <= 0) {
        r.error("target_us", "must be greater than 0");
      } else {
        out.target_us = *t;
      }
    }
    if (auto w = r.number("correctness_weight", 0, 1)) out.correctness_weight = *w;
    if (auto c = r.number("score_cap", 1, 1e6)) out.score_cap = *c;
    r.finish();
    return out;
  }

  mock_options parse_mock(const json& v) {
    mock_options out;
    object_reader r(v, "mock", m_errors);
    if (auto x = r.number("delay_ms", 0, m_limits.max_point_time_ms)) out.delay_ms = *x;
    if (auto f = r.choice<mock_fault>("fault", {{"none", mock_fault::none},
                                                {"crash", mock_fault::crash},
                                                {"hang", mock_fault::hang},
                                                {"abort", mock_fault::abort}})) {
      if (*f != mock_fault::none && !m_limits.allow_fault_injection) {
        r.error("fault",
                "fault injection is disabled; start the daemon with "
                "--allow-fault-injection to test faults");
      } else {
        out.fault = *f;
      }
    }
    if (auto x = r.integer("fault_index", 0, std::numeric_limits<std::int64_t>::max())) {
      out.fault_index = std::uint64_t(*x);
    }
    if (auto x = r.number("speedup", 1e-3, 1e6)) out.speedup = *x;
    if (auto o = r.choice<std::string>("output", {{"correct", "correct"},
                                                  {"wrong", "wrong"},
                                                  {"unwritten", "unwritten"},
                                                  {"half_written", "half_written"},
                                                  {"low_precision", "low_precision"}})) {
      out.output = *o;
    }
    r.finish();
    return out;
  }

  std::optional<int_expr> int_field(object_reader& r, std::string_view key, bool required,
                                    std::optional<std::int64_t> fallback = std::nullopt) {
    const json* v = r.get(key);
    if (!v) {
      if (fallback) return int_expr::of(*fallback);
      if (required && r.ok()) r.error(key, "is required");
      return std::nullopt;
    }
    return int_value(*v, r.field(key));
  }

  std::optional<int_expr> int_value(const json& v, const std::string& field) {
    if (const auto x = exact_integer(v)) return int_expr::of(*x);
    if (v.is_number_float() && std::isfinite(v.get<double>()) &&
        std::fabs(v.get<double>()) <= double(k_max_literal)) {
      error(field, "is " + v.dump() +
                       ", not an integer (give a whole number, or an expression such as "
                       "\"ceil(N/16)\" that is one at every point)");
      return std::nullopt;
    }
    if (v.is_number_unsigned()) {
      error(field, "is larger than 2^53");
      return std::nullopt;
    }
    if (v.is_number_integer() || v.is_number_float()) {
      error(field, "is " + v.dump() + ", outside +-2^53");
      return std::nullopt;
    }
    if (v.is_string()) {
      const auto& s = v.get_ref<const std::string&>();
      if (s.empty() || s.size() > k_max_expression_length) {
        error(field,
              "expression must be 1 to " + std::to_string(k_max_expression_length) + " characters");
        return std::nullopt;
      }
      if (!check_expression(s, field)) return std::nullopt;
      return int_expr{s, std::nullopt};
    }
    error(field, "must be an integer or an expression string such as \"ceil(N/16)\", not " +
                     std::string(json_type_name(v)));
    return std::nullopt;
  }

  std::optional<num_expr> num_field(object_reader& r, std::string_view key, bool required) {
    const json* v = r.get(key);
    if (!v) {
      if (required && r.ok()) r.error(key, "is required");
      return std::nullopt;
    }
    if (v->is_number()) {
      const double d = v->get<double>();
      if (!std::isfinite(d)) {
        r.error(key, "must be finite");
        return std::nullopt;
      }
      return num_expr{json(d).dump(), d};  // the text to_json() writes back
    }
    if (v->is_string()) {
      const auto& s = v->get_ref<const std::string&>();
      if (s.empty() || s.size() > k_max_expression_length) {
        r.error(key, "expression must be 1 to " + std::to_string(k_max_expression_length) +
                         " characters");
        return std::nullopt;
      }
      if (!check_expression(s, r.field(key))) return std::nullopt;
      return num_expr{s, std::nullopt};
    }
    r.error(key, "must be a number or an expression string such as \"2*M*N*K\", not " +
                     std::string(json_type_name(*v)));
    return std::nullopt;
  }

  std::optional<dtype> float_dtype(object_reader& r, std::string_view key) {
    auto t = r.choice<dtype>(
        key,
        {{"f32", dtype::f32}, {"f16", dtype::f16}, {"bf16", dtype::bf16}, {"f64", dtype::f64}});
    return t;
  }

  std::optional<std::string> identifier(object_reader& r, std::string_view key, bool required) {
    auto s = r.string(key, 64, required);
    if (s && !is_identifier(*s)) {
      r.error(key, "\"" + *s +
                       "\" is not an identifier (a letter or '_', then letters, digits "
                       "or '_')");
      return std::nullopt;
    }
    return s;
  }

  static bool variant_name(const std::string& s) {
    return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    });
  }

  // `variants`: each is `kernel` with the variant's fields laid over it (a shallow merge of the
  // top-level fields), or, where its op differs from the kernel's, a kernel of its own. An error
  // names the variant's field (variants[1].block), or the kernel's (kernel.source) where the
  // kernel gave the field; a field of the kernel wrong in every variant is reported once.
  std::vector<kernel_variant> parse_variants(const json& v, const json* kernel) {
    std::vector<kernel_variant> out;
    if (!v.is_array() || v.size() < k_min_variants || v.size() > k_max_variants) {
      error("variants",
            "must be a list of " + std::to_string(k_min_variants) + " to " +
                std::to_string(k_max_variants) +
                " variants ({\"name\": ..., and the kernel fields each changes}), not " +
                (v.is_array() ? "a list of " + std::to_string(v.size())
                              : std::string(json_type_name(v))));
      return out;
    }
    const json* base = nullptr;
    if (kernel) {
      if (kernel->is_object()) {
        base = kernel;
      } else {
        error("kernel", "must be an object (the fields the variants share), not " +
                            std::string(json_type_name(*kernel)));
      }
    }
    const std::string base_op = base && base->contains("op") && (*base)["op"].is_string()
                                    ? (*base)["op"].get<std::string>()
                                    : "";
    std::set<std::string> names;
    bool ok = true;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string path = index_path("variants", i);
      const json& item = v[i];
      if (!item.is_object()) {
        error(path, "must be an object ({\"name\": ..., and the kernel fields it changes}), not " +
                        std::string(json_type_name(item)));
        ok = false;
        continue;
      }
      std::string name;
      const auto it = item.find("name");
      if (it == item.end() || it->is_null()) {
        error(join_path(path, "name"), "is required");
        ok = false;
      } else if (!it->is_string() || !variant_name(it->get<std::string>())) {
        error(join_path(path, "name"),
              (it->is_string() ? "\"" + it->get<std::string>() + "\" is not a variant name"
                               : "must be a string, not " + std::string(json_type_name(*it))) +
                  " (1 to 64 letters, digits, '_', '.', '-')");
        ok = false;
      } else {
        name = it->get<std::string>();
        if (!names.insert(name).second) {
          error(join_path(path, "name"), "\"" + name + "\" is the name of an earlier variant");
          ok = false;
        }
      }
      json own = item;
      own.erase("name");
      const auto op = own.find("op");
      const bool whole = !base || (op != own.end() && op->is_string() && *op != base_op);
      json merged = whole ? own : *base;
      if (!whole) {
        for (const auto& [key, value] : own.items())
          merged[key] = value;
      }
      const std::size_t before = m_errors.size();
      auto k = parse_kernel(merged, path);
      if (!whole) {
        // Fields the kernel gave are the kernel's: report them there, and once.
        for (std::size_t e = before; e < m_errors.size(); ++e) {
          auto& field = m_errors[e].field;
          if (field.rfind(path + ".", 0) != 0) continue;
          const std::string rest = field.substr(path.size() + 1);
          const std::string key = rest.substr(0, rest.find_first_of(".["));
          if (!own.contains(key) && base->contains(key)) field = "kernel." + rest;
        }
        std::vector<field_error> kept(m_errors.begin(), m_errors.begin() + std::ptrdiff_t(before));
        for (std::size_t e = before; e < m_errors.size(); ++e) {
          const bool seen = std::any_of(kept.begin(), kept.end(), [&](const field_error& x) {
            return x.field == m_errors[e].field && x.message == m_errors[e].message;
          });
          if (!seen) kept.push_back(std::move(m_errors[e]));
        }
        m_errors = std::move(kept);
      }
      if (!k) {
        ok = false;
        continue;
      }
      out.push_back({std::move(name), std::move(*k)});
    }
    if (!ok) out.clear();
    return out;
  }

  std::optional<kernel_spec> parse_kernel(const json& v, const std::string& path) {
    object_reader r(v, path, m_errors);
    if (!r.ok()) return std::nullopt;
    auto op = r.string("op", 16, true);
    if (!op) {
      return std::nullopt;
    }
    std::optional<kernel_spec> out;
    if (*op == "gemm") {
      if (auto g = parse_gemm(r, false)) out = std::move(*g);
    } else if (*op == "stream") {
      if (auto s = parse_stream(r, false)) out = std::move(*s);
    } else if (*op == "custom") {
      if (auto c = parse_custom(r)) out = std::move(*c);
    } else {
      r.error("op", "\"" + *op + "\" is not one of gemm, stream, custom");
      return std::nullopt;
    }
    r.finish();
    return out;
  }

  std::optional<gemm_spec> parse_gemm(object_reader& r, bool as_reference) {
    gemm_spec g;
    auto m = int_field(r, "m", true);
    auto n = int_field(r, "n", true);
    auto k = int_field(r, "k", true);
    g.type = float_dtype(r, "dtype").value_or(dtype::f32);
    auto lay = [&](std::string_view key) {
      return r.choice<layout>(key, {{"row", layout::row}, {"col", layout::col}})
          .value_or(layout::row);
    };
    g.layout_a = lay("layout_a");
    g.layout_b = lay("layout_b");
    g.alpha = r.number("alpha", -1e30, 1e30).value_or(1.0);
    g.beta = r.number("beta", -1e30, 1e30).value_or(0.0);
    g.impl = r.choice<gemm_impl>("impl",
                                 {{"library", gemm_impl::library}, {"builtin", gemm_impl::builtin}})
                 .value_or(gemm_impl::library);
    if (as_reference) {
      g.bind_a = identifier(r, "a", true).value_or("");
      g.bind_b = identifier(r, "b", true).value_or("");
      g.bind_c = identifier(r, "c", true).value_or("");
    }
    if (!m || !n || !k) return std::nullopt;
    g.m = *m;
    g.n = *n;
    g.k = *k;
    return g;
  }

  std::optional<stream_spec> parse_stream(object_reader& r, bool as_reference) {
    stream_spec s;
    auto variant = r.choice<stream_variant>("variant",
                                            {{"copy", stream_variant::copy},
                                             {"scale", stream_variant::scale},
                                             {"add", stream_variant::add},
                                             {"triad", stream_variant::triad}},
                                            true);
    auto n = int_field(r, "n", true);
    s.type = float_dtype(r, "dtype").value_or(dtype::f32);
    s.scalar = r.number("scalar", -1e30, 1e30).value_or(3.0);
    if (as_reference && variant) {
      // STREAM's arrays: copy c=a, scale b=s*c, add c=a+b, triad a=b+s*c.
      const bool uses_a = *variant != stream_variant::scale;
      const bool uses_b = *variant != stream_variant::copy;
      s.bind_a = uses_a ? identifier(r, "a", true).value_or("") : "";
      s.bind_b = uses_b ? identifier(r, "b", true).value_or("") : "";
      s.bind_c = identifier(r, "c", true).value_or("");
    }
    if (!variant || !n) return std::nullopt;
    s.variant = *variant;
    s.n = *n;
    return s;
  }

  std::optional<std::array<int_expr, 3>> dims(object_reader& r, std::string_view key) {
    const json* v = r.get(key);
    if (!v) {
      r.error(key, "is required");
      return std::nullopt;
    }
    if (!v->is_array() || v->empty() || v->size() > 3) {
      r.error(key,
              "must be a list of 1 to 3 sizes (x, y, z), such as [256, 1, 1] or "
              "[\"ceil(N/256)\"]");
      return std::nullopt;
    }
    std::array<int_expr, 3> out{int_expr::of(1), int_expr::of(1), int_expr::of(1)};
    bool ok = true;
    for (std::size_t i = 0; i < v->size(); ++i) {
      if (auto e = int_value((*v)[i], index_path(r.field(key), i)))
        out[i] = *e;
      else
        ok = false;
    }
    if (!ok) return std::nullopt;
    return out;
  }

  // OpenCL C's build options that change code generation only (no paths, no files).
  static bool opencl_option_allowed(const std::string& o) {
    static const char* const flags[] = {"-cl-std=CL1.0",        "-cl-std=CL1.1",
                                        "-cl-std=CL1.2",        "-cl-std=CL2.0",
                                        "-cl-std=CL3.0",        "-cl-fast-relaxed-math",
                                        "-cl-mad-enable",       "-cl-no-signed-zeros",
                                        "-cl-finite-math-only", "-cl-unsafe-math-optimizations",
                                        "-cl-denorms-are-zero", "-cl-single-precision-constant",
                                        "-cl-opt-disable",      "-w"};
    return std::find(std::begin(flags), std::end(flags), o) != std::end(flags);
  }

  static bool option_allowed(kernel_language language, const std::string& o) {
    if (language == kernel_language::opencl) {
      if (opencl_option_allowed(o)) return true;
    } else if (o == "-O0" || o == "-O1" || o == "-O2" || o == "-O3" || o == "-ffast-math") {
      return true;
    }
    if (o.rfind("-D", 0) != 0) return false;
    const std::string def = o.substr(2);
    const auto eq = def.find('=');
    const std::string name = def.substr(0, eq);
    if (!is_identifier(name)) return false;
    if (eq == std::string::npos) return true;
    const std::string value = def.substr(eq + 1);
    return value.size() <= 64 && std::all_of(value.begin(), value.end(), [](char c) {
             return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
                    c == '+' || c == '-';
           });
  }

  // `default_language`: the language when the object names none (a custom reference takes its
  // kernel's).
  std::optional<custom_kernel> parse_launch(
      object_reader& r, kernel_language default_language = kernel_language::hip) {
    custom_kernel k;
    // hip runs on AMD and NVIDIA GPUs, cuda on NVIDIA GPUs only, opencl on OpenCL devices; the
    // device that measures a point decides (language_support.hpp). The source is checked against
    // its language's headers; with no valid language there is nothing to check it against.
    const auto language = r.choice<kernel_language>("language", k_languages);
    const bool language_ok = language || !r.get("language");
    k.language = language.value_or(default_language);
    auto source = r.string("source", m_limits.max_source_bytes, true);
    if (source) {
      const std::string& text = *source;
      std::optional<std::string> why;
      if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
        why = "is empty";
      } else if (language_ok) {
        why = check_kernel_source(text, k.language);
      }
      if (why) {
        r.error("source", *why);
        source.reset();
      }
    }
    auto entry = identifier(r, "entry", true);
    auto block = dims(r, "block");
    auto grid = dims(r, "grid");
    auto shared = int_field(r, "shared_bytes", false, 0);
    if (const json* opts = r.get("compile_options")) {
      const std::string field = r.field("compile_options");
      if (!opts->is_array() || opts->size() > 32) {
        error(field, "must be a list of at most 32 option strings");
      } else {
        for (std::size_t i = 0; i < opts->size(); ++i) {
          const auto& o = (*opts)[i];
          if (!o.is_string()) {
            error(index_path(field, i), "must be a string");
          } else if (!option_allowed(k.language, o.get<std::string>())) {
            error(index_path(field, i),
                  "\"" + o.get<std::string>() + "\" is not an allowed option for language " +
                      std::string(to_string(k.language)) +
                      (k.language == kernel_language::opencl
                           ? " (allowed: -cl-std=CL1.0..CL3.0, -cl-fast-relaxed-math, "
                             "-cl-mad-enable, -cl-no-signed-zeros, -cl-finite-math-only, "
                             "-cl-unsafe-math-optimizations, -cl-denorms-are-zero, "
                             "-cl-single-precision-constant, -cl-opt-disable, -w, -DNAME, "
                             "-DNAME=VALUE)"
                           : " (allowed: -O0..-O3, -ffast-math, -DNAME, -DNAME=VALUE)"));
          } else {
            const std::string& text = o.get_ref<const std::string&>();
            // -DNAME=PARAMETER: the parameter's value at each point.
            if (const auto eq = text.find('='); m_names && eq != std::string::npos) {
              const std::string value = text.substr(eq + 1);
              if (std::find(m_names->begin(), m_names->end(), value) != m_names->end()) {
                m_used.insert(value);
              }
            }
            k.compile_options.push_back(text);
          }
        }
      }
    }
    if (!language_ok || !source || !entry || !block || !grid || !shared) return std::nullopt;
    k.source = std::move(*source);
    k.entry = std::move(*entry);
    k.block = *block;
    k.grid = *grid;
    k.shared_bytes = *shared;
    return k;
  }

  std::optional<kernel_arg> parse_arg(const json& v, const std::string& path) {
    object_reader r(v, path, m_errors);
    if (!r.ok()) return std::nullopt;
    kernel_arg a;
    auto name = identifier(r, "name", true);
    auto type = r.string("type", 16, true);
    bool ok = name && type;
    if (type) {
      std::string base = *type;
      a.pointer = !base.empty() && base.back() == '*';
      if (a.pointer) base.pop_back();
      if (auto t = parse_dtype(base)) {
        a.type = *t;
      } else {
        r.error("type", "\"" + *type +
                            "\" is not a type (f64 f32 f16 bf16 i64 i32 u32 i8 u8, "
                            "with * for a buffer)");
        ok = false;
      }
    }
    const bool has_count = r.has("count"), has_value = r.has("value");
    auto count = int_field(r, "count", false);
    auto init = r.choice<arg_init>("init", {{"random", arg_init::random},
                                            {"zeros", arg_init::zeros},
                                            {"ones", arg_init::ones},
                                            {"arange", arg_init::arange}});
    auto output = r.boolean("output");
    auto local = r.boolean("local");
    auto scratch = r.boolean("scratch");
    auto value = num_field(r, "value", false);
    r.finish();
    if (!ok) return std::nullopt;
    if (a.pointer) {
      if (!has_count) {
        r.error("count", "is required for a buffer argument");
        return std::nullopt;
      }
      if (has_value) r.error("value", "is for scalar arguments; a buffer has count and init");
      if (!count) return std::nullopt;
      a.count = *count;
      a.init = init.value_or(arg_init::none);
      a.output = output.value_or(false);
      a.local = local.value_or(false);
      a.scratch = scratch.value_or(false);
      if (a.scratch && (a.output || a.local)) {
        r.error("scratch", a.output ? "a buffer is an output or scratch, not both (scratch is "
                                      "written by the kernel and never compared)"
                                    : "is for buffers in device memory; local memory is "
                                      "scratch already");
      }
      if (a.local && (init || a.output)) {
        r.error(init ? "init" : "output",
                "is for buffers in device memory; a local argument is work-group scratch memory "
                "that no one initialises or reads back");
      }
    } else {
      if (has_count || init || output || local || scratch) {
        r.error(has_count ? "count"
                : init    ? "init"
                : output  ? "output"
                : local   ? "local"
                          : "scratch",
                "is for buffer arguments (types ending in *); a scalar has value");
      }
      if (!has_value) {
        r.error("value", "is required for a scalar argument");
        return std::nullopt;
      }
      if (!value) return std::nullopt;
      a.value = *value;
    }
    a.name = std::move(*name);
    return a;
  }

  // Checks that a built-in reference's bound name is a buffer of the right type and direction.
  void check_binding(const std::vector<kernel_arg>& args, const std::string& name,
                     const std::string& field, dtype type, bool must_output) {
    if (name.empty()) return;
    for (const auto& a : args) {
      if (a.name != name) continue;
      if (!a.pointer) {
        error(field, "argument \"" + name + "\" is a scalar; the reference needs a buffer");
      } else if (a.type != type) {
        error(field, "argument \"" + name + "\" is " + std::string(to_string(a.type)) +
                         " but the reference computes in " + std::string(to_string(type)));
      } else if (must_output && !a.output) {
        error(field, "argument \"" + name +
                         "\" is the reference's output; mark it "
                         "\"output\": true");
      }
      return;
    }
    error(field, "no argument is named \"" + name + "\"");
  }

  // The language `r` names where it names one of them, else hip (what parse_launch reads, without
  // its errors).
  static kernel_language language_named(object_reader& r) {
    const json* v = r.get("language");
    if (v && v->is_string()) {
      for (const auto& [name, language] : k_languages) {
        if (*v == name) return language;
      }
    }
    return kernel_language::hip;
  }

  std::optional<custom_spec> parse_custom(object_reader& r) {
    custom_spec c;
    auto launch = parse_launch(r);
    const json* args = r.get("args");
    bool args_ok = true;
    if (!args) {
      r.error("args", "is required (a list of the kernel's arguments, in order)");
      args_ok = false;
    } else if (!args->is_array() || args->empty() || args->size() > m_limits.max_args) {
      r.error("args", "must be a list of 1 to " + std::to_string(m_limits.max_args) + " arguments");
      args_ok = false;
    } else {
      std::set<std::string> names;
      for (std::size_t i = 0; i < args->size(); ++i) {
        const std::string path = index_path(r.field("args"), i);
        if (auto a = parse_arg((*args)[i], path)) {
          if (!names.insert(a->name).second) {
            error(join_path(path, "name"), "\"" + a->name + "\" is used by an earlier argument");
            args_ok = false;
          }
          c.args.push_back(std::move(*a));
        } else {
          args_ok = false;
        }
      }
    }
    c.flops = num_field(r, "flops", false);
    c.bytes = num_field(r, "bytes", false);
    if (const json* ref = r.get("reference")) {
      const std::string path = r.field("reference");
      object_reader rr(*ref, path, m_errors);
      if (rr.ok()) {
        auto op = rr.string("op", 16, true);
        if (op && *op == "gemm") {
          if (auto g = parse_gemm(rr, true)) c.reference = std::move(*g);
        } else if (op && *op == "stream") {
          if (auto s = parse_stream(rr, true)) c.reference = std::move(*s);
        } else if (op && *op == "custom") {
          if (auto k = parse_launch(rr, launch ? launch->language : language_named(r))) {
            c.reference = std::move(*k);
          }
        } else if (op) {
          rr.error("op", "\"" + *op + "\" is not one of gemm, stream, custom");
        }
        rr.finish();
      }
      if (c.reference && args_ok) {
        const bool any_output =
            std::any_of(c.args.begin(), c.args.end(), [](const kernel_arg& a) { return a.output; });
        if (!any_output) {
          error(r.field("args"),
                "a kernel with a reference needs at least one argument marked "
                "\"output\": true to compare");
        }
        if (const auto* g = std::get_if<gemm_spec>(&*c.reference)) {
          check_binding(c.args, g->bind_a, join_path(path, "a"), g->type, false);
          check_binding(c.args, g->bind_b, join_path(path, "b"), g->type, false);
          check_binding(c.args, g->bind_c, join_path(path, "c"), g->type, true);
        } else if (const auto* s = std::get_if<stream_spec>(&*c.reference)) {
          const std::string* out = s->variant == stream_variant::triad   ? &s->bind_a
                                   : s->variant == stream_variant::scale ? &s->bind_b
                                                                         : &s->bind_c;
          for (auto [key, bound] : {std::pair{"a", &s->bind_a}, std::pair{"b", &s->bind_b},
                                    std::pair{"c", &s->bind_c}}) {
            check_binding(c.args, *bound, join_path(path, key), s->type, bound == out);
          }
        }
      }
    }
    if (launch && launch->language != kernel_language::opencl) {
      for (std::size_t i = 0; i < c.args.size(); ++i) {
        if (c.args[i].local) {
          error(join_path(index_path(r.field("args"), i), "local"),
                "local memory arguments are OpenCL's; a " +
                    std::string(to_string(launch->language)) +
                    " kernel takes dynamic shared memory through shared_bytes");
          args_ok = false;
        }
      }
    }
    if (launch && launch->language == kernel_language::opencl &&
        launch->shared_bytes != int_expr::of(0)) {
      error(r.field("shared_bytes"),
            "is HIP's dynamic shared memory; an OpenCL kernel takes work-group local memory as "
            "an argument with \"local\": true");
    }
    if (!launch || !args_ok) return std::nullopt;
    c.kernel = std::move(*launch);
    return c;
  }
};

json int_json(const int_expr& e) {
  if (e.literal) return *e.literal;
  return e.text;
}

json num_json(const num_expr& e) {
  if (e.literal) return *e.literal;
  return e.text;
}

json dims_json(const std::array<int_expr, 3>& d) {
  return json::array({int_json(d[0]), int_json(d[1]), int_json(d[2])});
}

json gemm_json(const gemm_spec& g) {
  json j = {{"op", "gemm"},
            {"m", int_json(g.m)},
            {"n", int_json(g.n)},
            {"k", int_json(g.k)},
            {"dtype", to_string(g.type)},
            {"layout_a", to_string(g.layout_a)},
            {"layout_b", to_string(g.layout_b)},
            {"alpha", g.alpha},
            {"beta", g.beta},
            {"impl", to_string(g.impl)}};
  if (!g.bind_a.empty()) j["a"] = g.bind_a;
  if (!g.bind_b.empty()) j["b"] = g.bind_b;
  if (!g.bind_c.empty()) j["c"] = g.bind_c;
  return j;
}

json stream_json(const stream_spec& s) {
  json j = {{"op", "stream"},
            {"variant", to_string(s.variant)},
            {"n", int_json(s.n)},
            {"dtype", to_string(s.type)},
            {"scalar", s.scalar}};
  if (!s.bind_a.empty()) j["a"] = s.bind_a;
  if (!s.bind_b.empty()) j["b"] = s.bind_b;
  if (!s.bind_c.empty()) j["c"] = s.bind_c;
  return j;
}

json launch_json(const custom_kernel& k) {
  return {{"op", "custom"},
          {"language", to_string(k.language)},
          {"source", k.source},
          {"entry", k.entry},
          {"block", dims_json(k.block)},
          {"grid", dims_json(k.grid)},
          {"shared_bytes", int_json(k.shared_bytes)},
          {"compile_options", k.compile_options}};
}

json custom_json(const custom_spec& c) {
  json j = launch_json(c.kernel);
  json args = json::array();
  for (const auto& a : c.args) {
    json arg = {{"name", a.name},
                {"type", std::string(to_string(a.type)) + (a.pointer ? "*" : "")}};
    if (a.pointer) {
      arg["count"] = int_json(a.count);
      if (a.init != arg_init::none) arg["init"] = to_string(a.init);
      arg["output"] = a.output;
      if (a.local) arg["local"] = true;
      if (a.scratch) arg["scratch"] = true;
    } else {
      arg["value"] = num_json(a.value);
    }
    args.push_back(std::move(arg));
  }
  j["args"] = std::move(args);
  if (c.flops) j["flops"] = num_json(*c.flops);
  if (c.bytes) j["bytes"] = num_json(*c.bytes);
  if (c.reference) {
    j["reference"] = std::visit(overloaded{[](const gemm_spec& g) { return gemm_json(g); },
                                           [](const stream_spec& s) { return stream_json(s); },
                                           [](const custom_kernel& k) { return launch_json(k); }},
                                *c.reference);
  }
  return j;
}

json kernel_json(const kernel_spec& k) {
  return std::visit(overloaded{[](const gemm_spec& g) { return gemm_json(g); },
                               [](const stream_spec& s) { return stream_json(s); },
                               [](const custom_spec& c) { return custom_json(c); }},
                    k);
}

}  // namespace

spec_limits spec_limits::stored() {
  spec_limits l;
  l.max_points = UINT64_MAX;
  l.max_sweep_parameters = SIZE_MAX;
  l.max_values_per_parameter = SIZE_MAX;
  l.max_source_bytes = SIZE_MAX;
  l.max_args = SIZE_MAX;
  l.max_labels = SIZE_MAX;
  l.max_point_time_ms = 1e12;
  l.allow_fault_injection = true;
  l.require_used_parameters = false;
  l.task_job = true;  // a task's stored job keeps its held-out points and label
  l.plan.max_dimension = INT64_MAX;
  l.plan.max_point_bytes = UINT64_MAX;
  l.plan.max_threads_per_block = INT64_MAX;
  l.plan.max_shared_bytes = INT64_MAX;
  return l;
}

job_spec parse_job_spec(const json& body, const spec_limits& limits) {
  return spec_parser(limits).parse(body);
}

namespace {

validation_error field_errors_of(const plan_error& e) {
  std::vector<field_error> errors;
  for (const auto& p : e.problems())
    errors.push_back({p.field, p.reason});
  return validation_error(std::move(errors));
}

}  // namespace

job_plan compile_plan(job_spec spec, const plan_limits& limits) {
  try {
    return job_plan(std::move(spec), limits);
  } catch (const plan_error& e) {
    throw field_errors_of(e);
  }
}

void validate_points(const job_plan& plan) {
  try {
    plan.validate_all();
  } catch (const plan_error& e) {
    throw field_errors_of(e);
  }
}

json to_json(const job_spec& spec) {
  json j;
  j["name"] = spec.name;
  j["labels"] = json::object();
  for (const auto& [k, v] : spec.labels)
    j["labels"][k] = v;
  j["engine"] = to_string(spec.engine);
  j["device"] = placement_json(spec);
  j["priority"] = spec.priority;
  j["kernel"] = kernel_json(spec.kernel);
  if (!spec.variants.empty()) {
    // Each variant whole, every optional field written (null when absent), so that laid over
    // `kernel` again it is exactly itself.
    json variants = json::array();
    for (const auto& v : spec.variants) {
      json k = kernel_json(v.kernel);
      if (std::holds_alternative<custom_spec>(v.kernel)) {
        for (const char* key : {"flops", "bytes", "reference"}) {
          if (!k.contains(key)) k[key] = nullptr;
        }
      }
      json item = {{"name", v.name}};
      item.update(k);
      variants.push_back(std::move(item));
    }
    j["variants"] = std::move(variants);
    j["baseline"] = spec.baseline_variant ? json(*spec.baseline_variant) : json(nullptr);
  }
  j["sweep"] = json::object();
  for (const auto& p : spec.sweep.parameters())
    j["sweep"][p.name] = p.values;
  if (spec.private_held_out_scores) j["held_out_scores"] = "private";
  if (!spec.sweep.held_out().empty()) {
    j["held_out"] = json::object();
    for (const auto& p : spec.sweep.held_out())
      j["held_out"][p.name] = p.values;
  }
  j["timing"] = {{"l2", to_string(spec.timing.l2)},
                 {"warmup", spec.timing.warmup},
                 {"min_samples", spec.timing.min_samples},
                 {"max_samples", spec.timing.max_samples},
                 {"min_time_ms", spec.timing.min_time_ms},
                 {"max_time_ms", spec.timing.max_time_ms},
                 {"target_rel_noise", spec.timing.target_rel_noise}};
  j["verify"] = {{"trials", spec.verify.trials},
                 {"atol", spec.verify.atol ? json(*spec.verify.atol) : json(nullptr)},
                 {"rtol", spec.verify.rtol ? json(*spec.verify.rtol) : json(nullptr)}};
  json fitness = {{"baseline", nullptr},
                  {"target_us", spec.fitness.target_us ? json(*spec.fitness.target_us) : json()},
                  {"correctness_weight", spec.fitness.correctness_weight},
                  {"score_cap", spec.fitness.score_cap}};
  if (spec.fitness.baseline) fitness["baseline"] = kernel_json(*spec.fitness.baseline);
  j["fitness"] = std::move(fitness);
  j["cache"] = spec.cache;
  json mock = {{"delay_ms", spec.mock.delay_ms},
               {"fault", to_string(spec.mock.fault)},
               {"speedup", spec.mock.speedup}};
  if (spec.mock.fault_index) mock["fault_index"] = *spec.mock.fault_index;
  if (spec.mock.output) mock["output"] = *spec.mock.output;
  j["mock"] = std::move(mock);
  if (spec.seed) j["seed"] = *spec.seed;
  return j;
}

}  // namespace kernelscan

#include "api/task_codec.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <set>
#include <span>

#include "api/detail/object_reader.hpp"
#include "api/job_codec.hpp"
#include "engine/dtype.hpp"
#include "engine/text_list.hpp"

namespace kernelscan {
namespace {

using detail::json_type_name;

// The parts of a job spec a task fixes, besides its kernel.
constexpr std::array<const char*, 9> k_fixed_parts{"sweep",  "held_out", "held_out_scores",
                                                   "verify", "timing",   "fitness",
                                                   "engine", "device",   "mock"};
// The fields of a task's kernel; "source" is each submission's.
constexpr std::array<const char*, 11> k_kernel_fields{
    "op",    "language", "args",         "flops",           "bytes", "reference",
    "entry", "block",    "shared_bytes", "compile_options", "grid"};

// Tolerances looser than this are refused: 100 times the dtype's default (integers: 1).
double max_tolerance(dtype t) {
  return is_floating(t) ? 100 * default_tolerance(t) : 1.0;
}

// "." and ".." are no names: a URL's path drops them (/api/v1/tasks/.. is /api/v1).
bool task_name_ok(const std::string& s) {
  return !s.empty() && s.size() <= 64 && s != "." && s != ".." &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
         });
}

// The element type of an argument's "type" ("f32*" -> f32).
std::optional<dtype> arg_dtype(const json& arg) {
  if (!arg.is_object() || !arg.contains("type") || !arg["type"].is_string()) return std::nullopt;
  std::string t = arg["type"].get<std::string>();
  if (!t.empty() && t.back() == '*') t.pop_back();
  return parse_dtype(t);
}

// A source that passes the language's checks, standing in for a candidate's while the template
// is validated.
std::string placeholder_source(const std::string& language, const std::string& entry) {
  if (language == "opencl") return "__kernel void " + entry + "(void) {}\n";
  return "extern \"C\" __global__ void " + entry + "() {}\n";
}

std::string language_of(const json& kernel) {
  const auto it = kernel.find("language");
  return it != kernel.end() && it->is_string() ? it->get<std::string>() : std::string("hip");
}

constexpr std::int64_t k_max_per_agent = 1000000;
constexpr double k_max_window_hours = 24 * 366;

// A task's "submissions": {"per_agent": N, "window_hours": H}; each problem goes to `error`.
template <class Error>
void check_submission_bound(const json& bound, Error& error) {
  if (!bound.is_object()) {
    error("submissions",
          "must be an object such as {\"per_agent\": 20, \"window_hours\": 24}, "
          "not " +
              std::string(json_type_name(bound)));
    return;
  }
  for (const auto& [key, value] : bound.items()) {
    if (key != "per_agent" && key != "window_hours") {
      error("submissions." + key,
            "is not a field of submissions (its fields: per_agent, "
            "window_hours)");
    }
  }
  const auto per_agent = bound.find("per_agent");
  if (per_agent == bound.end() || per_agent->is_null()) {
    error("submissions.per_agent", "is required: the most submissions one agent may make");
  } else if (!per_agent->is_number_integer() || per_agent->get<std::int64_t>() < 1 ||
             per_agent->get<std::int64_t>() > k_max_per_agent) {
    error("submissions.per_agent", "must be a whole number from 1 to " +
                                       std::to_string(k_max_per_agent) + ", not " +
                                       per_agent->dump());
  }
  if (const auto window = bound.find("window_hours"); window != bound.end() && !window->is_null()) {
    if (!window->is_number() || !(window->get<double>() > 0) ||
        window->get<double>() > k_max_window_hours) {
      error("submissions.window_hours", "must be a number of hours above 0 and at most " +
                                            std::to_string(int(k_max_window_hours)) +
                                            " (leave it out to bound them over the "
                                            "task's life), not " +
                                            window->dump());
    }
  }
}

}  // namespace

std::optional<submission_bound> submission_bound_of(const json& template_json) {
  const auto it = template_json.find("submissions");
  if (it == template_json.end() || !it->is_object()) return std::nullopt;
  submission_bound b;
  b.per_agent = it->value("per_agent", std::int64_t(0));
  if (const auto w = it->find("window_hours"); w != it->end() && w->is_number()) {
    b.window_hours = w->get<double>();
  }
  return b;
}

task_definition parse_task(const json& body, const spec_limits& limits) {
  std::vector<field_error> errors;
  auto error = [&errors](std::string field, std::string message) {
    errors.push_back({std::move(field), std::move(message)});
  };
  if (!body.is_object()) {
    throw validation_error(
        {{"", "a task is a JSON object, not " + std::string(json_type_name(body))}});
  }
  task_definition t;
  t.template_json = json::object();
  for (const auto& [key, value] : body.items()) {
    if (key == "name" || key == "description" || key == "kernel") continue;
    if (key == "submissions") {
      if (!value.is_null()) t.template_json[key] = value;
      continue;
    }
    if (std::find_if(k_fixed_parts.begin(), k_fixed_parts.end(),
                     [&name = key](const char* p) { return name == p; }) != k_fixed_parts.end()) {
      // No held-out points may be said as an empty object too.
      const bool none = key == "held_out" && value.is_object() && value.empty();
      if (!value.is_null() && !none) t.template_json[key] = value;
      continue;
    }
    error(key, "is not a field of a task (its fields: name, description, kernel, " +
                   comma_joined(k_fixed_parts) + ", submissions)");
  }
  if (const auto it = body.find("name"); it == body.end() || it->is_null()) {
    error("name", "is required");
  } else if (!it->is_string() || !task_name_ok(it->get<std::string>())) {
    error("name",
          "must be 1 to 64 letters, digits, '_', '.' or '-' (not . or ..), not " + it->dump());
  } else {
    t.name = it->get<std::string>();
  }
  if (const auto it = body.find("description"); it != body.end() && !it->is_null()) {
    if (!it->is_string() || it->get<std::string>().size() > 10000) {
      error("description", "must be a string of at most 10000 characters");
    } else {
      t.description = it->get<std::string>();
    }
  }
  const auto kernel = body.find("kernel");
  json sample_kernel;
  if (kernel == body.end() || kernel->is_null()) {
    error("kernel", "is required: the custom kernel's arguments, flops, bytes and reference");
  } else if (!kernel->is_object()) {
    error("kernel", "must be an object, not " + std::string(json_type_name(*kernel)));
  } else {
    json k = *kernel;
    for (const auto& [key, value] : kernel->items()) {
      if (key == "source") {
        error("kernel.source", "is the candidate's: each submission gives its own source");
      } else if (std::find_if(k_kernel_fields.begin(), k_kernel_fields.end(),
                              [&name = key](const char* f) { return name == f; }) ==
                 k_kernel_fields.end()) {
        error("kernel." + key, "is not a field of a task's kernel (its fields: " +
                                   comma_joined(k_kernel_fields) + ")");
      }
    }
    if (k.contains("op") && k["op"] != "custom") {
      error("kernel.op", "a task's kernel is a custom kernel (\"custom\"), not " + k["op"].dump());
    }
    k["op"] = "custom";
    if (!k.contains("reference") || k["reference"].is_null()) {
      error("kernel.reference", "is required: every candidate is checked against it");
    }
    k.erase("source");
    t.template_json["kernel"] = k;
    sample_kernel = k;
    const std::string entry =
        k.contains("entry") && k["entry"].is_string() ? k["entry"].get<std::string>() : "candidate";
    sample_kernel["source"] = placeholder_source(language_of(k), entry);
    if (!k.contains("entry")) sample_kernel["entry"] = entry;
    if (!k.contains("block")) sample_kernel["block"] = {1};
    if (!k.contains("grid")) sample_kernel["grid"] = {1};
  }
  const json* verify = t.template_json.contains("verify") ? &t.template_json["verify"] : nullptr;
  if (verify && verify->is_object() && verify->contains("trials")) {
    const json& trials = (*verify)["trials"];
    if (trials.is_number() && trials.get<double>() < 2) {
      error("verify.trials",
            "must be at least 2 in a task: fewer trials do not verify a "
            "candidate (a point that is not verified never scores)");
    }
  }
  if (const auto it = t.template_json.find("submissions"); it != t.template_json.end()) {
    check_submission_bound(*it, error);
  }
  // The whole template, checked as the job a submission would make; its errors are said with the
  // task's own, all at once (but for fields already named).
  json sample = t.template_json;
  sample.erase("submissions");
  sample["name"] = "task " + t.name;
  sample["kernel"] = sample_kernel;
  sample["cache"] = false;
  spec_limits as_task_job = limits;
  as_task_job.task_job = true;
  std::optional<job_spec> parsed;
  try {
    parsed = parse_job_spec(sample, as_task_job);
  } catch (const validation_error& e) {
    const std::size_t own = errors.size();
    for (const auto& f : e.errors()) {
      const bool named = std::any_of(
          errors.begin(), errors.begin() + std::ptrdiff_t(own), [&](const field_error& known) {
            return known.field == f.field || f.field.rfind(known.field + ".", 0) == 0;
          });
      if (!named) errors.push_back(f);
    }
  }
  if (!errors.empty()) throw validation_error(std::move(errors));
  const job_spec& spec = *parsed;
  validate_points(compile_plan(spec, limits.plan));
  t.sample = spec;

  // Tolerances a candidate could pass with anything are refused.
  std::optional<double> limit;
  std::string loosest;
  if (const auto& args = t.template_json["kernel"]["args"]; args.is_array()) {
    for (const auto& arg : args) {
      if (!arg.is_object() || !arg.value("output", false)) continue;
      if (const auto d = arg_dtype(arg); d && (!limit || max_tolerance(*d) > *limit)) {
        limit = max_tolerance(*d);
        loosest = std::string(to_string(*d));
      }
    }
  }
  for (const auto& [key, value] :
       {std::pair{"atol", spec.verify.atol}, std::pair{"rtol", spec.verify.rtol}}) {
    if (limit && value && *value > *limit) {
      error(std::string("verify.") + key,
            json(*value).dump() + " is looser than a " + loosest + " output can be checked with " +
                "(at most " + json(*limit).dump() + ", 100 times its default tolerance)");
    }
  }
  if (!errors.empty()) throw validation_error(std::move(errors));
  return t;
}

json task_job_body(const std::string& task_name, const json& template_json,
                   const json& submission) {
  if (!submission.is_object()) {
    throw validation_error(
        {{"", "a submission is a JSON object, not " + std::string(json_type_name(submission))}});
  }
  const json& kernel = template_json.at("kernel");
  const std::string language = language_of(kernel);
  std::vector<field_error> errors;
  const std::string allowed = comma_joined(std::span(
      std::begin(k_submission_fields), std::end(k_submission_fields) - 1));  // all but language
  for (const auto& [key, value] : submission.items()) {
    if (key == "language") {
      if (!value.is_string() || value.get<std::string>() != language) {
        errors.push_back({key, "is fixed by task \"" + task_name + "\" to " + language +
                                   " (leave it out, or give the same)"});
      }
    } else if (std::find(std::begin(k_submission_fields), std::end(k_submission_fields), key) ==
               std::end(k_submission_fields)) {
      errors.push_back(
          {key, "is fixed by task \"" + task_name + "\": a submission gives only " + allowed});
    }
  }
  if (const auto labels = submission.find("labels");
      labels != submission.end() && labels->is_object() && labels->contains("task")) {
    errors.push_back({"labels.task", "is set by the daemon to the task's name"});
  }
  if (!errors.empty()) throw validation_error(std::move(errors));

  json job = json::object();
  for (const auto& [key, value] : template_json.items()) {
    if (key != "kernel" && key != "submissions") job[key] = value;
  }
  job["kernel"] = kernel;
  for (const char* key : {"source", "entry", "block", "grid", "shared_bytes", "compile_options"}) {
    if (const auto it = submission.find(key); it != submission.end()) job["kernel"][key] = *it;
  }
  job["name"] = submission.contains("name") ? submission["name"] : json(task_name + " candidate");
  json labels = submission.contains("labels") ? submission["labels"] : json::object();
  if (labels.is_object()) labels["task"] = task_name;
  job["labels"] = std::move(labels);
  job["cache"] = false;  // every candidate is measured: a stored result is not evidence
  return job;
}

json task_json(const std::string& name, const std::string& description, const json& template_json,
               std::int64_t created_ms, std::optional<std::int64_t> retired_ms,
               bool with_held_out) {
  const json& kernel = template_json.at("kernel");
  json k = json::object();
  for (const char* key : {"language", "entry", "block", "grid", "shared_bytes", "compile_options",
                          "args", "flops", "bytes", "reference"}) {
    if (const auto it = kernel.find(key); it != kernel.end()) k[key] = *it;
  }
  k["language"] = language_of(kernel);
  std::set<std::string> dtypes;
  std::optional<double> tolerance;  // the outputs' default, the loosest of them
  if (const auto args = kernel.find("args"); args != kernel.end() && args->is_array()) {
    for (const auto& arg : *args) {
      const auto d = arg_dtype(arg);
      if (!d) continue;
      dtypes.insert(std::string(to_string(*d)));
      if (arg.value("output", false)) {
        tolerance = std::max(tolerance.value_or(0.0), default_tolerance(*d));
      }
    }
  }
  const json sweep = template_json.value("sweep", json::object());
  std::uint64_t public_points = 1;
  for (const auto& [p, values] : sweep.items())
    public_points *= values.is_array() ? values.size() : 1;
  std::uint64_t held_points = 0;
  if (const auto held = template_json.find("held_out"); held != template_json.end()) {
    held_points = 1;
    for (const auto& [p, values] : held->items())
      held_points *= values.is_array() ? values.size() : 1;
  }
  const json verify = template_json.value("verify", json::object());
  auto tol = [&](const char* key) {
    const auto it = verify.find(key);
    if (it != verify.end() && it->is_number()) return *it;
    return tolerance ? json(*tolerance) : json(nullptr);
  };
  const json fitness = template_json.value("fitness", json::object());
  json out = {
      {"name", name},
      {"description", description},
      {"status", retired_ms ? "retired" : "active"},
      {"created_at", format_time_ms(created_ms)},
      {"retired_at", retired_ms ? json(format_time_ms(*retired_ms)) : json(nullptr)},
      {"kernel", std::move(k)},
      {"dtypes", dtypes},
      {"sweep", sweep},
      {"public_points", public_points},
      {"held_out_points", held_points},
      {"held_out_scores", template_json.value("held_out_scores", json("shown"))},
      {"verify",
       {{"trials", verify.value("trials", json(3))}, {"atol", tol("atol")}, {"rtol", tol("rtol")}}},
      {"timing", template_json.value("timing", json::object())},
      {"fitness",
       {{"target_us", fitness.value("target_us", json(nullptr))},
        {"correctness_weight", fitness.value("correctness_weight", json(0.5))},
        {"baseline", fitness.value("baseline", json(nullptr))}}},
      {"submissions", template_json.value("submissions", json(nullptr))},
      {"engine", template_json.value("engine", json("auto"))},
      {"device", template_json.value("device", json("any"))},
      {"links",
       {{"self", "/api/v1/tasks/" + name},
        {"submissions", "/api/v1/tasks/" + name + "/submissions"},
        {"jobs", "/api/v1/jobs?task=" + name}}}};
  if (with_held_out) out["held_out"] = template_json.value("held_out", json(nullptr));
  return out;
}

}  // namespace kernelscan

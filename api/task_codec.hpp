#pragma once
// Evaluation tasks on the wire (README "Tasks", api/openapi.yaml `TaskDefinition`, `Task`,
// `TaskSubmission`): what an operator fixes of a job (its kernel's arguments, reference, sizes
// including held-out ones, verification, timing, fitness, placement), what an agent sends
// against it (source and launch settings only), and the job spec the two make together.

#include <cstdint>
#include <optional>
#include <string>

#include "api/field_errors.hpp"
#include "api/job_spec_codec.hpp"
#include "api/json.hpp"

namespace kernelscan {

// The fields of a task's kernel a submission gives (and a task may default: all but source).
inline constexpr const char* k_submission_fields[] = {"source", "entry",        "block",
                                                      "grid",   "shared_bytes", "compile_options",
                                                      "name",   "labels",       "language"};

// How many submissions a task takes from one agent: at most `per_agent` in any `window_hours`
// (nullopt: over the task's life).
struct submission_bound {
  std::int64_t per_agent = 0;
  std::optional<double> window_hours;
};

struct task_definition {
  std::string name;  // [A-Za-z0-9_.-]{1,64}
  std::string description;
  // The fixed parts, as given: kernel (without source), sweep, held_out, verify, timing,
  // fitness, engine, device, mock; and submissions (the bound on each agent's).
  json template_json;
  // The job a submission would make (with a placeholder kernel body), held-out sizes included:
  // where it can run is checked against the devices when the task is created.
  job_spec sample;
};

// Parses POST /api/v1/tasks and validates its template by building a sample job spec from it
// with the job codec under `limits` (field errors name the task's fields: "kernel.args[2].count").
// Verification must run at least 2 trials; atol and rtol must be within 100 times the default
// tolerance of the outputs' least precise dtype. Throws validation_error listing every problem.
task_definition parse_task(const json& body, const spec_limits& limits);

// The bound a task's template sets on each agent's submissions, if any.
std::optional<submission_bound> submission_bound_of(const json& template_json);

// The job spec body an agent's submission makes: the task's template with the submission's
// kernel fields laid over its kernel, the submission's name and labels (plus task=<name>), and
// `cache` false. A field the task fixes (anything but k_submission_fields, or a language other
// than the task's) is a validation_error naming it.
json task_job_body(const std::string& task_name, const json& template_json, const json& submission);

// A task as GET /api/v1/tasks/{name} shows it: what an agent needs (its description, kernel
// arguments, public sizes, dtypes, tolerances, flops and bytes, target); `held_out` only when
// `with_held_out` (an operator).
json task_json(const std::string& name, const std::string& description, const json& template_json,
               std::int64_t created_ms, std::optional<std::int64_t> retired_ms, bool with_held_out);

}  // namespace kernelscan

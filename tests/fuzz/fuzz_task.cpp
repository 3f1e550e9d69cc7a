// libFuzzer target: what an evaluation task takes from the outside, an operator's task definition
// (POST /api/v1/tasks) and an agent's submission against it, through the task codec, the job
// spec it makes, plan compilation and point resolution. The input is one JSON object,
// {"task": <definition>, "submission": <submission>}. Invariants beyond "no crash": only the
// documented exceptions escape, every validation error says what is wrong (also once its
// message is scrubbed of held-out sizes), the task as an agent sees it has no held-out sizes,
// and an accepted job survives its canonical JSON unchanged.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/held_out.hpp"
#include "api/job_spec_codec.hpp"
#include "api/json.hpp"
#include "api/task_codec.hpp"

using namespace kernelscan;

namespace {

spec_limits fuzz_limits() {
  spec_limits limits;
  limits.max_points = 256;  // keep each input fast; the per-point code is the same
  return limits;
}

void check_errors(const validation_error& e, std::uint64_t public_points) {
  if (e.errors().empty()) std::abort();  // an error must say what is wrong
  for (const auto& f : e.errors()) {
    if (f.message.empty() || scrubbed_message(f.message, public_points).empty()) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  json input;
  try {
    input = parse_json(text);
  } catch (const json_syntax_error&) {
    return 0;
  }
  if (!input.is_object() || !input.contains("task")) return 0;
  const spec_limits limits = fuzz_limits();
  task_definition task;
  try {
    task = parse_task(input["task"], limits);
  } catch (const validation_error& e) {
    check_errors(e, 0);
    return 0;
  }
  // What an agent reads of the task names no held-out size.
  if (task_json(task.name, task.description, task.template_json, 0, std::nullopt, false)
          .contains("held_out")) {
    std::abort();
  }
  if (!input.contains("submission")) return 0;
  std::uint64_t public_count = 0;
  try {
    const json job = task_job_body(task.name, task.template_json, input["submission"]);
    public_count = public_points(job).value_or(0);
    spec_limits as_task_job = limits;
    as_task_job.task_job = true;
    const job_spec spec = parse_job_spec(job, as_task_job);
    const job_plan plan = compile_plan(spec, as_task_job.plan);
    validate_points(plan);
    // Accepted: the stored form must read back as the same spec.
    const job_spec again = parse_job_spec(json::parse(to_json(spec).dump()), spec_limits::stored());
    if (!(again == spec)) std::abort();
  } catch (const validation_error& e) {
    check_errors(e, public_count);
  }
  return 0;
}

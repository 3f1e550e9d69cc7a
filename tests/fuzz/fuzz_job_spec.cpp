// libFuzzer target: a request body through JSON parsing, job spec validation, plan compilation
// and point resolution. Invariants beyond "no crash": only the documented exceptions escape,
// and an accepted spec survives its canonical JSON unchanged.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/job_spec_codec.hpp"
#include "api/json.hpp"

using namespace kernelscan;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  spec_limits limits;
  limits.max_points = 256;  // keep each input fast; the per-point code is the same
  limits.allow_fault_injection = true;
  json body;
  try {
    body = parse_json(text);
  } catch (const json_syntax_error&) {
    return 0;
  }
  job_spec spec;
  try {
    spec = parse_job_spec(body, limits);
    const job_plan plan = compile_plan(spec, limits.plan);
    validate_points(plan);
  } catch (const validation_error& e) {
    if (e.errors().empty()) std::abort();  // an error must say what is wrong
    return 0;
  }
  // Accepted: the stored form must read back as the same spec.
  const json canonical = to_json(spec);
  const job_spec again = parse_job_spec(json::parse(canonical.dump()), spec_limits::stored());
  if (!(again == spec)) std::abort();
  return 0;
}

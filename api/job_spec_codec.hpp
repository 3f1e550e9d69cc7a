#pragma once
// The job spec on the wire (DESIGN.md §2, api/openapi.yaml `JobSpec`): strict parsing with an
// error per bad field, and the canonical form the daemon stores and hands to workers.

#include <cstdint>

#include "api/field_errors.hpp"
#include "api/json.hpp"
#include "engine/job_plan.hpp"
#include "engine/job_spec.hpp"

namespace kernelscan {

// What a submission may ask for. The daemon's configuration sets these (README, "Limits").
struct spec_limits {
  std::uint64_t max_points = 100000;  // sweep points per job
  std::size_t max_sweep_parameters = 16;
  std::size_t max_values_per_parameter = 10000;
  std::size_t max_source_bytes = 256 * 1024;  // kernel source text
  std::size_t max_args = 64;
  std::size_t max_labels = 32;
  double max_point_time_ms = 600000;   // timing.max_time_ms and mock.delay_ms
  bool allow_fault_injection = false;  // mock.fault
  // A sweep parameter that no field uses is an error (every point would be the same kernel).
  bool require_used_parameters = true;
  // An evaluation task's job (the task pipeline's): it may have `held_out` points and the label
  // `task`, which a plain job may not.
  bool task_job = false;
  plan_limits plan;

  // For specs this daemon stored itself: they passed validation when accepted, and must load
  // even if the configured limits have since been lowered.
  static spec_limits stored();
};

// Parses and checks a submitted job: types, ranges, names, expressions (their syntax and that
// every name in them is a sweep parameter), and that every sweep parameter is used by a field.
// Does not resolve the sweep points (see validate_points). Throws validation_error listing
// every problem found.
job_spec parse_job_spec(const json& body, const spec_limits& limits);

// Compiles the spec's expressions; throws validation_error naming the field of each that does
// not compile (syntax, a name that is not a sweep parameter).
job_plan compile_plan(job_spec spec, const plan_limits& limits);

// Resolves every point of `plan` and throws validation_error naming every field that is invalid
// at some point (an expression that is not an integer there, a size over a limit), each with
// the first such point. O(points).
void validate_points(const job_plan& plan);

// The canonical JSON of a spec: every default filled in, sweeps as explicit value lists.
// parse_job_spec(to_json(s), spec_limits::stored()) == s.
json to_json(const job_spec& spec);

}  // namespace kernelscan

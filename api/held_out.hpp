#pragma once
// What a candidate may see of an evaluation task's job (README "Tasks"): its held-out points
// are measured and scored like the public ones, but without an operator token a read shows
// such a point only as {index, held_out: true, status, fitness: {correct, combined_score},
// flags}, and the job's spec without `held_out`, so that no held-out size reaches a candidate.
// Where the task keeps held-out scores private, such a point is only {index, held_out: true,
// status}, and the job's summary.fitness is its "public" part: the score over the public
// points alone, so that no held-out time can be read back from a score.
// Held-out points are those numbered from the public sweep's size up (sweep.hpp).
//
// Plain functions; thread-safe.

#include <cstdint>
#include <optional>
#include <string>

#include "api/json.hpp"
#include "engine/job.hpp"

namespace kernelscan {

// The number of public points of a stored job spec that has held-out points; nullopt for a
// spec without.
std::optional<std::uint64_t> public_points(const json& spec);
std::optional<std::uint64_t> public_points(const std::string& spec_json);

// Whether a stored job spec's held-out points' scores are private (`"held_out_scores":
// "private"`): a candidate then sees neither their fitness nor their flags, and the job's
// fitness over its public points alone.
bool private_held_out_scores(const json& spec);

// A held-out row (a result's JSON text) as a candidate sees it: without its fitness and flags
// where `private_scores`.
std::string redacted_row(const std::string& result_json, bool private_scores = false);

// The job as a candidate sees it: the spec without `held_out`, a best point that is held out
// shown without its sizes and time, and with private held-out scores the public fitness.
// `spec_json`: the job's stored spec when `job` does not carry it (list views), to tell which
// points are held out.
void redact_job(job_record& job, const std::string& spec_json);

// A message (a job's error, a field error of a refused submission) as a candidate sees it: one
// that names a held-out point ("point 5 (N=12288)", "the first, point 5: ...") says only that
// the point is held out, since its details could carry its sizes.
std::string scrubbed_message(const std::string& message, std::uint64_t public_points);

// A field error of a refused submission as a candidate sees it: one about a held-out point says
// only that, whole, since all of it could carry the point's sizes (the value an expression of
// the candidate's took there, the memory a buffer needs), not only what follows "point K".
std::string scrubbed_field_message(const std::string& message, std::uint64_t public_points);

// A "job" event's data (the job as GET /jobs/{id} shows it) as a candidate sees it; the text
// unchanged for a job without held-out points.
std::string redacted_job_event(const std::string& job_text);

}  // namespace kernelscan

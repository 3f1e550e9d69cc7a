#pragma once
// How a job is accepted (POST /api/v1/jobs, POST /api/v1/imports): the Idempotency-Key checked
// and a known one replayed, the spec parsed and validated under the daemon's limits, placed on
// the devices of the fleet that could run it (its memory bounding the points' sizes), given the
// daemon's seed, stored, announced as an event and handed to the scheduler. Knows nothing of
// HTTP: it takes the request's body and key and returns the job or throws api_error /
// validation_error, which the transport maps to their status.
//
// Threading: thread-safe (HTTP handlers call it concurrently); the store, the event hub and the
// hooks must be thread-safe too.

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/api_error.hpp"
#include "api/json.hpp"
#include "api/task_codec.hpp"
#include "engine/device_needs.hpp"
#include "engine/job_spec.hpp"
#include "server/config.hpp"
#include "server/event_hub.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

// A job the pipeline created, or the one an Idempotency-Key named before.
struct submit_result {
  std::int64_t id = 0;
  bool created = false;  // false: a retry, answered with the job the key created
  std::string job_text;  // the job as GET /api/v1/jobs/{id} shows it
};

// Who submits against a task: the agent (access_control::agent_of); whether it may see
// held-out points (an operator, which is anyone on a daemon without operator tokens); and
// whether the task's bound on each agent's submissions spares it (only a caller that presents
// an operator token: on a daemon without them the bound holds for everyone).
struct task_caller {
  std::string agent;
  bool sees_held_out = false;
  bool unbounded = false;
};

class submit_pipeline {
 public:
  struct hooks {
    // The devices of the fleet, as GET /api/v1/devices lists them.
    std::function<std::vector<json>()> devices;
    // A stored job may be dispatched.
    std::function<void(std::int64_t)> enqueue;
  };

  // Draws the seed a job gets when it names none (within int64; called under a lock): the
  // daemon's is unpredictable_seed(). `store` and `events` must outlive the pipeline.
  using seed_source = std::function<std::uint64_t()>;
  submit_pipeline(job_store& store, event_hub& events, const serve_config& config, hooks h,
                  seed_source seeds);

  // POST /api/v1/jobs: `body` is the request's JSON text, `idempotency_key` its header ("" for
  // none).
  submit_result submit(const std::string& body, const std::string& idempotency_key);

  // POST /api/v1/tasks/{name}/submissions: `body` holds only the candidate's source and launch
  // settings (task_codec.hpp); the job is the task's template with them laid over its kernel,
  // its public and held-out sizes, the daemon's seed, labelled task=<name>. A retired task
  // takes none (409), nor one from an agent that made as many as the task's `submissions`
  // bound allows (429 submission_limit, with retry_after_s where the bound has a window); a
  // retry of one it accepted before is still answered. A caller that is no operator is told
  // nothing of a held-out point in a field error.
  submit_result submit_to_task(const task_record& task, const std::string& body,
                               const std::string& idempotency_key, const task_caller& caller);

  // How many submissions `agent` has left under task `task`'s bound (GET /api/v1/tasks/{name}):
  // {"used", "remaining"}, or null for a task without one.
  json submissions_left(const task_record& task, const std::string& agent);

  // POST /api/v1/tasks: a task's sample job (task_definition::sample) must be placeable as a
  // submission would be: some live device runs its engine and kernel language, and every point,
  // held-out ones included, fits that device's memory. Throws validation_error naming the field.
  void check_task(const job_spec& sample);

  // POST /api/v1/imports: results measured elsewhere, stored as a finished job.
  submit_result import_results(const std::string& body, const std::string& idempotency_key);

  // The job a key created, if it is known (checked: at most 200 printable ASCII characters;
  // the same key with a different request is a 409).
  std::optional<submit_result> replay_known_key(const std::string& key,
                                                const std::string& request_hash);

  // FNV-1a of a request body: tells a retry from a different request under one key.
  static std::string request_hash(std::string_view body);

 private:
  struct placement {
    std::uint64_t max_memory = 0;           // the largest memory of a device the job may run on
    engine_kind engine = engine_kind::any;  // what the queue matches devices by
    need_bits needs = 0;                    // and what they must have (job_needs)
  };
  placement check_placement(const job_spec& spec);
  submit_result replay(std::int64_t id);
  // A task's job: the task, who submitted it, and the task's bound on that agent's submissions
  // (nullopt: none, or a caller it does not hold).
  struct task_origin {
    std::string task;
    std::string agent;
    std::optional<submission_bound> bound;
  };
  submit_result store_job(job_spec spec, const std::string& key, const std::string& hash,
                          const task_origin* origin = nullptr);
  // The 429 of an agent that made as many submissions as `origin`'s bound allows.
  static api_error submission_limit(const task_origin& origin, const agent_count& counted,
                                    std::int64_t now_ms);

  job_store& m_store;
  event_hub& m_events;
  serve_config m_config;
  hooks m_hooks;
  std::mutex m_seeds_mutex;
  seed_source m_seeds;
};

// A job seed drawn from the operating system's random source (std::random_device), 63 bits: no
// one can tell it from the seeds jobs got before. A job's inputs, verification trials and timed
// checks all follow from its seed (README "Analysis and fitness"), and the code that derives
// them is public, so a kernel built for a seed it could foresee would know which samples are
// checked and what their inputs are; each job's seed is shown in its spec, and the seeds of a
// generator with 32 bits of state (std::mt19937_64 seeded once from random_device) could be
// searched out from one of them.
std::uint64_t unpredictable_seed();

}  // namespace kernelscan

#pragma once
// The state the API's route handlers share, and the handlers themselves, defined by area in
// http_routes_jobs.cpp, http_routes_devices.cpp and http_routes_system.cpp. Internal to
// http_api.
//
// Threading: handlers run on the transport's HTTP threads concurrently; every member they use
// is thread-safe.

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "server/access_control.hpp"
#include "server/http_api.hpp"
#include "server/http_metrics.hpp"
#include "server/http_transport.hpp"
#include "server/submit_pipeline.hpp"

namespace kernelscan {

struct http_api::impl {
  impl(job_store& s, scheduler& sc, job_waiters& w, event_hub& e, const serve_config& c);

  // Every route, in the order they are tried, bound to `self` (null: for listing them only).
  static std::vector<http_route> table(impl* self);

  job_store& store;
  scheduler& sched;
  job_waiters& waiters;
  event_hub& events;
  serve_config config;
  std::atomic<int> long_polls{0};
  std::atomic<int> event_streams{0};
  access_control access;
  http_metrics requests;
  submit_pipeline submissions;
  std::optional<http_transport> transport;  // made last: it serves the handlers above

  // ---- system: health, metrics, the page (http_routes_system.cpp) ----
  response healthz(const request&);
  response readyz(const request&);
  response metrics_text(const request&);
  response asset(const request&);

  // ---- devices (http_routes_devices.cpp) ----
  response list_devices(const request&);
  response get_device(const request&);
  response measure_roofline(const request&);
  std::string addressed_node(const request& req) const;
  json fleet_device(const std::string& node, const std::string& index);

  // ---- jobs, results, events (http_routes_jobs.cpp) ----
  response submit_job(const request&);
  response import_results(const request&);
  response list_jobs(const request&);
  response get_job(const request&);
  response cancel_job(const request&);
  // An operator confirms the speedups of a job whose score was withheld (excessive_speedup):
  // its summary is scored again, confirmed.
  response confirm_job(const request&);
  response delete_job(const request&);
  response results(const request&);
  response events_stream(const request&);
  job_record find_job(std::int64_t id);

  // ---- evaluation tasks (http_routes_tasks.cpp) ----
  response create_task(const request&);
  response list_tasks(const request&);
  response get_task(const request&);
  response retire_task(const request&);
  response submit_to_task(const request&);
  task_record find_task(const std::string& name);
};

// A created job's answer: 201 with its Location, or 200 for a replayed Idempotency-Key.
response created(const submit_result& s);

}  // namespace kernelscan

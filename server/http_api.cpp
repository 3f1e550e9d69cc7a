#include "server/http_api.hpp"

#include "server/detail/http_api_impl.hpp"
#include "server/fleet_devices.hpp"

namespace kernelscan {

http_api::impl::impl(job_store& s, scheduler& sc, job_waiters& w, event_hub& e,
                     const serve_config& c)
    : store(s),
      sched(sc),
      waiters(w),
      events(e),
      config(c),
      access({c.token_file, c.auth_reads, c.rate_limit, c.cors_origin, c.operator_token_file}),
      submissions(s, e, c,
                  {[this] {
                     return fleet_devices(store, sched, config.lease_timeout_s,
                                          !config.database.empty());
                   },
                   [this](std::int64_t id) { sched.enqueue(id); }},
                  unpredictable_seed) {
  transport.emplace(table(this), access, requests, config);
}

std::vector<http_route> http_api::impl::table(impl* self) {
  using fn = response (impl::*)(const request&);
  const auto bind = [self](fn f) {
    return [self, f](const request& req) { return (self->*f)(req); };
  };
  using a = route_access;
  return {
      {"GET", "/api/v1/jobs/{id}", a::read, bind(&impl::get_job)},  // the hot one first
      {"GET", "/api/v1/jobs", a::read, bind(&impl::list_jobs)},
      {"POST", "/api/v1/jobs", a::submit, bind(&impl::submit_job)},
      {"POST", "/api/v1/imports", a::submit, bind(&impl::import_results)},
      {"GET", "/api/v1/jobs/{id}/results", a::read, bind(&impl::results)},
      {"POST", "/api/v1/jobs/{id}/cancel", a::write, bind(&impl::cancel_job)},
      {"POST", "/api/v1/jobs/{id}/confirm", a::operate, bind(&impl::confirm_job)},
      {"DELETE", "/api/v1/jobs/{id}", a::operate, bind(&impl::delete_job)},
      {"GET", "/api/v1/events", a::read, bind(&impl::events_stream), false},
      {"GET", "/api/v1/tasks", a::read, bind(&impl::list_tasks)},
      {"POST", "/api/v1/tasks", a::operate, bind(&impl::create_task)},
      {"GET", "/api/v1/tasks/{name}", a::read, bind(&impl::get_task)},
      {"DELETE", "/api/v1/tasks/{name}", a::operate, bind(&impl::retire_task)},
      {"POST", "/api/v1/tasks/{name}/submissions", a::submit, bind(&impl::submit_to_task)},
      {"GET", "/api/v1/devices", a::read, bind(&impl::list_devices)},
      {"GET", "/api/v1/devices/{index}", a::read, bind(&impl::get_device)},
      {"POST", "/api/v1/devices/{index}/roofline", a::write, bind(&impl::measure_roofline)},
      {"GET", "/healthz", a::open, bind(&impl::healthz)},
      {"GET", "/metrics", a::read, bind(&impl::metrics_text)},
      {"GET", "/readyz", a::open, bind(&impl::readyz)},
      {"GET", "/api/v1/openapi.yaml", a::open, bind(&impl::asset)},
      {"GET", "/", a::open, bind(&impl::asset)},
      {"GET", "/assets/{file}", a::open, bind(&impl::asset)},
  };
}

http_api::http_api(job_store& store, scheduler& sched, job_waiters& waiters, event_hub& events,
                   const serve_config& config)
    : m_impl(std::make_unique<impl>(store, sched, waiters, events, config)) {}

http_api::~http_api() = default;

int http_api::bind(const std::string& host, int port) {
  return m_impl->transport->bind(host, port);
}

bool http_api::run() {
  return m_impl->transport->run();
}

void http_api::stop() {
  m_impl->transport->stop();
}

std::vector<std::pair<std::string, std::string>> http_api::routes() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& r : impl::table(nullptr))
    out.emplace_back(r.method, r.path);
  return out;
}

}  // namespace kernelscan

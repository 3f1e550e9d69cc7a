#pragma once
// The HTTP/JSON API (api/openapi.yaml) and the dashboard's assets: the route table and its
// handlers (http_routes_*.cpp) over the transport (http_transport: httplib, access checks, the
// error shape). Handlers never touch a GPU or wait on one: they read the store, hand new jobs to
// the submit pipeline, and cancel requests to the scheduler.
//
// Threading: bind() then run() on one thread; stop() from any thread. Requests are served by a
// pool of `http_threads` threads that grows while slow clients hold them (http_transport).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/config.hpp"
#include "server/event_hub.hpp"
#include "server/job_waiters.hpp"
#include "server/scheduler.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

class http_api {
 public:
  http_api(job_store& store, scheduler& sched, job_waiters& waiters, event_hub& events,
           const serve_config& config);
  ~http_api();

  // Binds the listening socket; returns the port (useful with port 0). Throws
  // std::runtime_error if the address cannot be bound.
  int bind(const std::string& host, int port);
  // Serves until stop(). Returns false if serving failed.
  bool run();
  void stop();

  // Every route the server registers, as (method, OpenAPI path template).
  static std::vector<std::pair<std::string, std::string>> routes();

 private:
  struct impl;
  std::unique_ptr<impl> m_impl;
};

}  // namespace kernelscan

#pragma once
// Carries events between the nodes of a fleet (DESIGN.md §7) through the store (PostgreSQL's
// LISTEN/NOTIFY): this daemon's "job" events go out as the job's id (a job, with its spec, can
// be larger than a notification may be) and its "points" events as they are; another node's
// job event is read back from the store and published here, and handed to `on_job` (so that a
// queued job wakes idle devices here, and a cancel reaches the node that runs the job).
//
// Threading: attach() once at start-up, before the store joins; the rest runs on the hub's
// publishers' threads and the store's event thread.

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "server/event_hub.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

class fleet_relay {
 public:
  fleet_relay(job_store& store, event_hub& hub, std::function<void(const job_record&)> on_job)
      : m_store(store), m_hub(hub), m_on_job(std::move(on_job)) {}

  void attach();
  // What another node announced: published on this daemon's hub.
  void received(const store_event& e);

  // The id of a "job" event's job: its JSON starts {"id":N (the job codec writes it first).
  static std::optional<std::int64_t> job_id_of(std::string_view job_json);

 private:
  job_store& m_store;
  event_hub& m_hub;
  std::function<void(const job_record&)> m_on_job;
};

}  // namespace kernelscan

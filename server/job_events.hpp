#pragma once
// What the scheduler announces on the events stream (GET /api/v1/events): a job's state after
// each change ("job": the job as GET /api/v1/jobs/{id} shows it) and points once stored
// ("points": per job, the index range stored, the counts, and the job's progress), and a
// device's as it changes ("device"). The hub relays them to the other nodes of a fleet.
//
// Threading: not thread-safe; the scheduler uses it on its io thread.

#include <cstdint>
#include <functional>
#include <span>
#include <utility>

#include "api/json.hpp"
#include "server/event_hub.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

class job_events {
 public:
  // A job's progress as the scheduler knows it: (done, total).
  using progress_fn = std::function<std::pair<std::uint64_t, std::uint64_t>(std::int64_t job)>;

  job_events(job_store& store, event_hub& hub) : m_store(store), m_hub(hub) {}

  // Publishes the job as stored now; the store being unreachable means no event (logged).
  void job_changed(std::int64_t id);
  // One "points" event per job among `rows` (just stored).
  void points_stored(std::span<const result_row> rows, const progress_fn& progress);
  // A "device" event (device_event()): a device's state, job, worker, error or roofline changed.
  void device_changed(const json& event) { m_hub.publish("device", event.dump()); }
  // Another node's device seen offline here (each node sees that for itself: not relayed).
  void device_offline_elsewhere(const json& event) { m_hub.publish_local("device", event.dump()); }

 private:
  job_store& m_store;
  event_hub& m_hub;
};

}  // namespace kernelscan

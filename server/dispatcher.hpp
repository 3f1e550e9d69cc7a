#pragma once
// Dispatch (DESIGN.md §1, §7): the queue lives in the store, and a device that is idle asks it
// for a job. The store picks the first queued job, by priority then submission order, that the
// device can run (the job's engine is `auto` or the device's; its placement names the device,
// its node or its model, or nothing) and hands it over under a lease on this node. Several
// daemons sharing one PostgreSQL store claim concurrently without ever taking one job twice.
// A device's engine is matched by name, so a new engine kind needs nothing here.
//
// Threading: not thread-safe; the scheduler uses it on its io thread.

#include <chrono>
#include <optional>
#include <string>

#include "engine/device_info.hpp"
#include "server/clock.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

class dispatcher {
 public:
  dispatcher(job_store& store, const clock& time, std::string node,
             std::chrono::milliseconds lease);

  // A job for this idle device, now running on it under a lease; nullopt when nothing it can run
  // is queued, or the store cannot be reached (logged once per outage; the next try is later).
  std::optional<claimed_job> next_for(const device_info& device);

  const std::string& node() const { return m_node; }
  std::chrono::milliseconds lease() const { return m_lease; }

 private:
  job_store& m_store;
  const clock& m_clock;
  std::string m_node;
  std::chrono::milliseconds m_lease;
  bool m_failing = false;
};

}  // namespace kernelscan

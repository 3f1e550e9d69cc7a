#pragma once
// A node's heartbeat (DESIGN.md §7): every lease/4 it tells the store that the node is alive and
// how its devices are, renews the leases of the jobs it runs (learning which it lost and which
// were asked to cancel on another node), and queues again any job whose node stopped renewing
// (a node killed mid-job: another node resumes it). While the store cannot be reached it tries
// every second; jobs keep running, and a lease only runs out `lease` after the last renewal.
//
// Threading: not thread-safe; the scheduler uses it on its io thread, arming a timer for due().

#include <chrono>
#include <span>
#include <string>
#include <vector>

#include "server/clock.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

class node_heartbeat {
 public:
  node_heartbeat(job_store& store, const clock& time, std::string node,
                 std::chrono::milliseconds lease);

  struct outcome {
    bool stored = false;                // false: the store could not be reached, nothing is known
    lease_renewal renewal;              // of the leases held
    std::vector<std::int64_t> expired;  // anyone's jobs queued again
  };
  outcome beat(std::span<const device_record> devices, std::span<const job_lease> held);
  // When the next beat is due.
  clock::time_point due() const { return m_due; }
  // The last beat did not reach the store (the next one is tried within a second).
  bool failing() const { return m_failing; }

 private:
  job_store& m_store;
  const clock& m_clock;
  std::string m_node;
  std::chrono::milliseconds m_lease;
  clock::time_point m_due;
  bool m_failing = false;
};

}  // namespace kernelscan

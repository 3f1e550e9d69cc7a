#pragma once
// Another node's devices as this node reads them from the fleet's store (DESIGN.md §7): as that
// node last wrote them, `offline` once it left or has not sent a heartbeat within its lease; and
// a watch that tells when they go offline. A node that dies sends nothing, so each node sees it
// for itself, from the store, at its own heartbeat, and tells its own event streams.
//
// Threading: not thread-safe; the scheduler uses offline_watch on its io thread.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "api/json.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

// Whether the node of `d` left, or has not been heard from within its lease.
bool node_offline(const device_record& d, double lease_timeout_s);

// `d` as GET /api/v1/devices shows another node's device at `now_ms`: its node's JSON, offline
// (no job, no worker) where node_offline(), with its `last_heartbeat_at`.
json other_node_device(const device_record& d, std::int64_t now_ms, double lease_timeout_s);

class offline_watch {
 public:
  // The "device" events (device_event()) of the other nodes' devices in `devices` (as
  // job_store::devices() read them at `now_ms`) that went offline since the last look. The
  // first look only takes note: a node that was offline before is no news.
  std::vector<json> look(const std::vector<device_record>& devices, const std::string& own_node,
                         std::int64_t now_ms, double lease_timeout_s);

 private:
  bool m_looked = false;
  std::map<std::pair<std::string, int>, bool> m_offline;  // by node and index
};

}  // namespace kernelscan

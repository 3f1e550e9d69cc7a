#pragma once
// Every device of the fleet as GET /api/v1/devices lists them (DESIGN.md §7): this node's from
// the scheduler (live), the other nodes' as they last wrote them to the store (when a device's
// state, job, worker, last error or roofline changes, and with every heartbeat: points
// measured), shown `offline` when their node stopped or has not been heard from within its
// lease. Each carries its `node` and `last_heartbeat_at`. In a fleet, a store that cannot be
// reached throws its storage_error (the API answers 503): this node's devices alone would read
// as a fleet whose other nodes are gone, and a device of another node as one that does not
// exist.
//
// Threading: thread-safe (HTTP handlers).

#include <string>
#include <vector>

#include "api/json.hpp"
#include "server/scheduler.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

// By node (this node first), then index. `shared`: the store is a fleet's (PostgreSQL); a
// daemon alone on its SQLite file lists its own devices only (whatever earlier runs under
// other names left in the file).
std::vector<json> fleet_devices(job_store& store, const scheduler& sched, double lease_timeout_s,
                                bool shared);

// A device field as text: "" where it is null (a model or PCI address not known) or absent.
std::string device_text(const json& device, const char* key);

}  // namespace kernelscan

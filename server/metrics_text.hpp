#pragma once
// GET /metrics: the daemon's figures in the Prometheus text format (version 0.0.4): build
// info, the store's job counts (left out, with kernelscan_storage_up 0, while it cannot be
// read), points measured and waiting for storage, worker restarts, devices by state, the
// store's own figures, long polls, and the HTTP request series of http_metrics.
//
// Threading: thread-safe (reads snapshots of each source).

#include <string>

#include "server/http_metrics.hpp"
#include "server/scheduler.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

// `long_polls`: requests waiting on a job (?wait=) now.
std::string prometheus_text(job_store& store, const scheduler& sched, const http_metrics& requests,
                            int long_polls);

}  // namespace kernelscan

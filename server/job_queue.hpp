#pragma once
// The order jobs wait in: priority (higher first), then submission order (lower id first).
// A device takes the first job it can run, so a job pinned to a busy device does not hold
// back the jobs behind it.
//
// Threading: not thread-safe; the scheduler uses it on its io thread.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "storage/job_store.hpp"

namespace kernelscan {

class job_queue {
 public:
  // False if the job is already queued.
  bool push(const pending_job& job);
  // False if it was not queued.
  bool remove(std::int64_t id);
  bool contains(std::int64_t id) const { return m_jobs.count(id) != 0; }
  std::size_t size() const { return m_jobs.size(); }

  // Removes and returns the first job, in queue order, for which `can_run` is true.
  std::optional<pending_job> pop_first(const std::function<bool(const pending_job&)>& can_run);

 private:
  std::set<std::pair<int, std::int64_t>> m_order;  // (-priority, id)
  std::map<std::int64_t, pending_job> m_jobs;
};

}  // namespace kernelscan

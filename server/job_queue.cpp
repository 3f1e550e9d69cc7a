#include "server/job_queue.hpp"

namespace kernelscan {

bool job_queue::push(const pending_job& job) {
  if (!m_jobs.emplace(job.id, job).second) return false;
  m_order.emplace(-job.priority, job.id);
  return true;
}

bool job_queue::remove(std::int64_t id) {
  auto it = m_jobs.find(id);
  if (it == m_jobs.end()) return false;
  m_order.erase({-it->second.priority, id});
  m_jobs.erase(it);
  return true;
}

std::optional<pending_job> job_queue::pop_first(
    const std::function<bool(const pending_job&)>& can_run) {
  for (auto it = m_order.begin(); it != m_order.end(); ++it) {
    const pending_job& job = m_jobs.at(it->second);
    if (!can_run(job)) continue;
    pending_job out = job;
    m_order.erase(it);
    m_jobs.erase(out.id);
    return out;
  }
  return std::nullopt;
}

}  // namespace kernelscan

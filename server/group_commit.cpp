#include "server/group_commit.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace kernelscan {

group_commit::group_commit(writer write, const clock& time, limits l)
    : m_write(std::move(write)), m_clock(time), m_limits(l) {}

bool group_commit::add(result_row row) {
  if (m_rows.empty()) m_first_held = m_clock.now();
  m_rows.push_back(std::move(row));
  return !m_failing && m_rows.size() >= m_limits.max_group;
}

std::optional<std::vector<result_row>> group_commit::flush() {
  if (m_rows.empty()) return std::vector<result_row>{};
  try {
    m_write(m_rows);
  } catch (const storage_error& e) {
    if (!m_failing) {
      spdlog::error("cannot store {} measured point(s): {}; retrying every {} ms", m_rows.size(),
                    e.what(), m_limits.retry.count());
      m_failing = true;
    }
    m_retry_at = m_clock.now() + m_limits.retry;
    return std::nullopt;
  }
  if (m_failing) {
    spdlog::info("storage recovered; {} measured point(s) held in memory are stored",
                 m_rows.size());
    m_failing = false;
  }
  std::vector<result_row> out;
  out.swap(m_rows);
  return out;
}

bool group_commit::holds(std::int64_t job_id) const {
  return std::any_of(m_rows.begin(), m_rows.end(),
                     [job_id](const result_row& r) { return r.job_id == job_id; });
}

std::optional<clock::time_point> group_commit::due() const {
  if (m_rows.empty()) return std::nullopt;
  if (m_failing) return m_retry_at;
  return m_first_held + m_limits.window;
}

}  // namespace kernelscan

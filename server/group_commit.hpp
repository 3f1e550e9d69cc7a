#pragma once
// Group commit of measured points: points wait here until their group is written, in one
// transaction of up to `max_group` rows, within `window` of the first of them (one commit costs
// about as much as tens of rows, so committing each point alone would cap the daemon at a few
// thousand points per second). While storage fails (a full disk, PostgreSQL down) the points
// stay held and writing is retried every `retry`; past `max_held` held points the scheduler
// stops sending points to workers until storage is back. Nothing measured is dropped.
//
// Threading: not thread-safe; the scheduler uses it on its io thread. The caller arms a timer
// for due() and calls flush() then.

#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "server/clock.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

class group_commit {
 public:
  // Writes rows in one transaction; throws storage_error when it cannot.
  using writer = std::function<void(std::span<const result_row>)>;
  struct limits {
    std::chrono::milliseconds window{2};
    std::size_t max_group = 256;
    std::size_t max_held = 10000;
    std::chrono::milliseconds retry{1000};
  };

  group_commit(writer write, const clock& time, limits l);
  group_commit(writer write, const clock& time) : group_commit(std::move(write), time, limits{}) {}

  // Holds a measured point. True when its group is full: flush() now.
  bool add(result_row row);
  // Writes every held point. Returns them once stored (nothing is held then); on failure keeps
  // them, logs (once per outage) and returns nullopt.
  std::optional<std::vector<result_row>> flush();
  // When to call flush(): the window of the oldest held point closing, or the next retry while
  // storage fails; nullopt when nothing is held.
  std::optional<clock::time_point> due() const;

  std::size_t held() const { return m_rows.size(); }
  // Whether a point of job `job_id` is held (linear in held()).
  bool holds(std::int64_t job_id) const;
  bool failing() const { return m_failing; }
  // Too much is held: measure nothing more until storage takes it.
  bool full() const { return m_rows.size() >= m_limits.max_held; }

 private:
  writer m_write;
  const clock& m_clock;
  limits m_limits;
  std::vector<result_row> m_rows;
  clock::time_point m_first_held;
  bool m_failing = false;
  clock::time_point m_retry_at;
};

}  // namespace kernelscan

#pragma once
// Lets HTTP threads wait for a job to end (GET /jobs/{id}?wait=S) without polling the store:
// the scheduler notifies a job's waiters when it reaches a terminal state.
//
// Threading: thread-safe. notify() is cheap when nobody waits on that job.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>

namespace kernelscan {

class job_waiters {
 public:
  using clock = std::chrono::steady_clock;

  // Returns when `is_done()` is true (checked first, then after each notification for `id`),
  // at `deadline`, or on shutdown. Returns is_done()'s last answer; what is_done() throws (a
  // store that cannot be read) comes out of wait(), the wait given up.
  bool wait(std::int64_t id, clock::time_point deadline, const std::function<bool()>& is_done);
  void notify(std::int64_t id);
  // Wakes every waiter and makes later waits return at once.
  void shutdown();
  std::size_t waiting() const;

 private:
  struct watch {
    std::size_t waiters = 0;
    std::uint64_t generation = 0;
  };
  mutable std::mutex m_mutex;
  std::condition_variable m_cv;
  std::unordered_map<std::int64_t, watch> m_watches;
  std::size_t m_waiting = 0;
  bool m_stopping = false;
};

}  // namespace kernelscan

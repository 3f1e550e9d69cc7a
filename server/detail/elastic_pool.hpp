#pragma once
// A thread pool for tasks that may wait on the outside world (an HTTP connection waits on its
// client). `base` threads run tasks as a fixed pool would; while every thread is busy, a new task
// gets a new thread, up to `cap` threads in all, so that tasks stuck on slow clients delay only
// themselves. Past the cap, at most `max_waiting` tasks wait their turn, in order; more are
// refused. A thread beyond `base` that finds no task for `linger` ends.
//
// Ownership: the pool owns its threads and the tasks not yet started. Threading: post() from any
// thread; shutdown() (also run by the destructor) from a thread that is not the pool's. A task
// must not throw.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <limits>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace kernelscan::detail {

class elastic_pool {
 public:
  // Starts `base` threads; `cap` is raised to `base` if lower.
  elastic_pool(std::size_t base, std::size_t cap, std::chrono::milliseconds linger,
               std::size_t max_waiting = std::numeric_limits<std::size_t>::max());
  ~elastic_pool();
  elastic_pool(const elastic_pool&) = delete;
  elastic_pool& operator=(const elastic_pool&) = delete;

  // Takes `task`, or refuses it (false) where it would wait with `max_waiting` tasks waiting
  // already; a refused task is left as it was, for the caller to deal with. Throws
  // std::logic_error after shutdown().
  bool post(std::function<void()>&& task);
  // Runs every task posted, then joins every thread. Idempotent.
  void shutdown();

  // Threads alive now, and the most there have been at once.
  std::size_t threads() const;
  std::size_t peak_threads() const;

 private:
  void run();
  void spawn();  // m_mutex held

  const std::size_t m_base;
  const std::size_t m_cap;
  const std::chrono::milliseconds m_linger;
  const std::size_t m_max_waiting;

  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  std::deque<std::function<void()>> m_tasks;
  std::list<std::thread> m_threads;
  // Threads that ended for want of work: joined by the next post() or by shutdown().
  std::vector<std::thread> m_retired;
  std::size_t m_idle = 0;  // threads waiting for a task, or started and about to
  std::size_t m_peak = 0;
  bool m_stopping = false;
};

}  // namespace kernelscan::detail

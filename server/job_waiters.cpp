#include "server/job_waiters.hpp"

namespace kernelscan {

bool job_waiters::wait(std::int64_t id, clock::time_point deadline,
                       const std::function<bool()>& is_done) {
  std::unique_lock lock(m_mutex);
  if (m_stopping) {
    lock.unlock();
    return is_done();
  }
  auto& w = m_watches[id];
  ++w.waiters;
  ++m_waiting;
  // On every way out, a throwing `is_done` included; with the lock held.
  const auto leave = [&] {
    --m_waiting;
    if (--m_watches[id].waiters == 0) m_watches.erase(id);
  };
  bool done = false;
  for (;;) {
    // Read the generation before checking, so a notification between the check and the wait
    // is not missed.
    const std::uint64_t seen = m_watches[id].generation;
    lock.unlock();
    try {
      done = is_done();
    } catch (...) {
      lock.lock();
      leave();
      throw;
    }
    lock.lock();
    if (done || m_stopping) break;
    const bool woke = m_cv.wait_until(
        lock, deadline, [&] { return m_stopping || m_watches[id].generation != seen; });
    if (!woke) break;  // deadline
  }
  leave();
  return done;
}

void job_waiters::notify(std::int64_t id) {
  {
    std::lock_guard lock(m_mutex);
    auto it = m_watches.find(id);
    if (it == m_watches.end()) return;
    ++it->second.generation;
  }
  m_cv.notify_all();
}

void job_waiters::shutdown() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_cv.notify_all();
}

std::size_t job_waiters::waiting() const {
  std::lock_guard lock(m_mutex);
  return m_waiting;
}

}  // namespace kernelscan

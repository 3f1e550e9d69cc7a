#include "server/detail/elastic_pool.hpp"

#include <algorithm>
#include <stdexcept>
#include <system_error>

namespace kernelscan::detail {

elastic_pool::elastic_pool(std::size_t base, std::size_t cap, std::chrono::milliseconds linger,
                           std::size_t max_waiting)
    : m_base(base), m_cap(std::max(base, cap)), m_linger(linger), m_max_waiting(max_waiting) {
  try {
    std::lock_guard lock(m_mutex);
    for (std::size_t i = 0; i < m_base; ++i)
      spawn();
  } catch (...) {
    shutdown();  // the threads already started must be joined before they are destroyed
    throw;
  }
}

elastic_pool::~elastic_pool() {
  shutdown();
}

void elastic_pool::spawn() {
  m_threads.emplace_back([this] { run(); });
  ++m_idle;
  m_peak = std::max(m_peak, m_threads.size());
}

bool elastic_pool::post(std::function<void()>&& task) {
  std::vector<std::thread> retired;
  {
    std::lock_guard lock(m_mutex);
    if (m_stopping) throw std::logic_error("elastic_pool: post() after shutdown()");
    // Tasks already waiting for a thread: those that no idle thread will take.
    const std::size_t waiting = m_tasks.size() > m_idle ? m_tasks.size() - m_idle : 0;
    if (m_tasks.size() >= m_idle && m_threads.size() >= m_cap && waiting >= m_max_waiting) {
      return false;
    }
    m_tasks.push_back(std::move(task));
    bool spawned = false;
    // More tasks waiting than idle threads to take them: every thread is busy (or already
    // promised to an earlier task), so this task would wait on work that may never end soon.
    if (m_tasks.size() > m_idle && m_threads.size() < m_cap) {
      try {
        spawn();
        spawned = true;
      } catch (const std::system_error&) {
        // Out of threads (EAGAIN): the task waits for a busy one, as in a fixed pool.
      }
    }
    if (!spawned) m_wake.notify_one();
    retired.swap(m_retired);
  }
  for (auto& t : retired)
    t.join();
  return true;
}

void elastic_pool::run() {
  std::unique_lock lock(m_mutex);
  // This thread was counted idle by spawn(), before it first waits: tasks posted meanwhile are
  // its to take, rather than reasons to start yet more threads.
  for (;;) {
    const bool woken =
        m_wake.wait_for(lock, m_linger, [this] { return !m_tasks.empty() || m_stopping; });
    if (!woken) {
      if (m_threads.size() <= m_base) continue;
      // An extra thread with nothing to do ends; it cannot join itself, so the next post() or
      // shutdown() does.
      --m_idle;
      const auto self = std::find_if(m_threads.begin(), m_threads.end(), [](const std::thread& t) {
        return t.get_id() == std::this_thread::get_id();
      });
      m_retired.push_back(std::move(*self));
      m_threads.erase(self);
      return;
    }
    --m_idle;
    if (m_tasks.empty()) return;  // stopping, and every task has run
    auto task = std::move(m_tasks.front());
    m_tasks.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // what it captured goes before the lock is taken again
    lock.lock();
    ++m_idle;
  }
}

void elastic_pool::shutdown() {
  std::list<std::thread> threads;
  std::vector<std::thread> retired;
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
    // No thread retires once stopping is set, so the lists are final.
    threads.swap(m_threads);
    retired.swap(m_retired);
  }
  m_wake.notify_all();
  for (auto& t : threads)
    t.join();
  for (auto& t : retired)
    t.join();
}

std::size_t elastic_pool::threads() const {
  std::lock_guard lock(m_mutex);
  return m_threads.size();
}

std::size_t elastic_pool::peak_threads() const {
  std::lock_guard lock(m_mutex);
  return m_peak;
}

}  // namespace kernelscan::detail

#include "engine/host_tasks.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace kernelscan {

constexpr std::size_t k_max_threads = 8;  // the comparison reads no faster past about this many

struct task_group::state {
  std::size_t n = 0;
  const std::function<void(std::size_t)>* fn = nullptr;
  // Under the pool's mutex:
  std::size_t next = 0;  // the first task not yet taken
  std::size_t done = 0;
  std::exception_ptr error;
  std::condition_variable finished;
};

namespace {

class helper_pool {
 public:
  static helper_pool& get() {
    static helper_pool pool;
    return pool;
  }
  std::size_t size() const { return m_threads.size(); }

  void post(const std::shared_ptr<task_group::state>& g) {
    {
      const std::lock_guard lock(m_mutex);
      m_queue.push_back(g);
    }
    m_work.notify_all();
  }

  // Runs g's tasks that no one has taken, then waits until all of them ran.
  void finish(task_group::state& g) {
    std::unique_lock lock(m_mutex);
    while (g.next < g.n)
      run_one(g, lock);
    g.finished.wait(lock, [&] { return g.done == g.n; });
  }

 private:
  helper_pool() {
    const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t threads = std::min(cores, k_max_threads) - 1;
    m_threads.reserve(threads);
    for (std::size_t t = 0; t < threads; ++t)
      m_threads.emplace_back([this] { serve(); });
  }
  ~helper_pool() {
    {
      const std::lock_guard lock(m_mutex);
      m_stopping = true;
    }
    m_work.notify_all();
    for (auto& t : m_threads)
      t.join();
  }

  void serve() {
    std::unique_lock lock(m_mutex);
    for (;;) {
      m_work.wait(lock, [&] { return m_stopping || !m_queue.empty(); });
      if (m_stopping) return;
      // Kept alive past its removal from the queue while this thread runs one of its tasks.
      const std::shared_ptr<task_group::state> g = m_queue.front();
      run_one(*g, lock);
    }
  }

  // Takes g's next task and runs it without the lock; a group whose last task is taken leaves
  // the queue.
  void run_one(task_group::state& g, std::unique_lock<std::mutex>& lock) {
    const std::size_t i = g.next++;
    if (g.next == g.n) {
      std::erase_if(m_queue, [&](const auto& q) { return q.get() == &g; });
    }
    lock.unlock();
    std::exception_ptr error;
    try {
      (*g.fn)(i);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (error && !g.error) g.error = error;
    if (++g.done == g.n) g.finished.notify_all();
  }

  std::mutex m_mutex;
  std::condition_variable m_work;
  std::deque<std::shared_ptr<task_group::state>> m_queue;
  bool m_stopping = false;
  std::vector<std::thread> m_threads;
};

}  // namespace

task_group::task_group(std::size_t n, const std::function<void(std::size_t)>& fn)
    : m_state(std::make_shared<state>()) {
  m_state->n = n;
  m_state->fn = &fn;
  // A single task runs on the waiting thread: no helper is woken for it.
  if (n > 1 && helper_pool::get().size()) helper_pool::get().post(m_state);
}

task_group::~task_group() {
  if (m_waited) return;
  try {
    helper_pool::get().finish(*m_state);
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor reports nothing
  }
}

void task_group::wait() {
  if (m_waited) return;
  m_waited = true;
  helper_pool::get().finish(*m_state);
  if (m_state->error) std::rethrow_exception(std::exchange(m_state->error, nullptr));
}

std::size_t task_group::helpers() {
  return helper_pool::get().size();
}

}  // namespace kernelscan

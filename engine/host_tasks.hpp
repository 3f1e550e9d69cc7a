#pragma once
// Host work spread over the process's helper threads: comparing a large output with the
// reference's answer on one core reads a few GB/s, far less than the host's memory gives, and is
// most of a memory-bound point's wall time on a GPU.
//
// A task_group runs fn(0) … fn(n − 1), each once, on the helpers (min(cores, 8) − 1 threads,
// started on first use and shared by every group of the process) and on the thread that waits
// for it: wait() takes the tasks no helper has taken yet, so a group finishes even where every
// helper is busy or there is none. The tasks of one group run in any order and at once; what
// they compute must not depend on either (the comparison merges its parts in task order).
//
// Thread-safe: groups of several threads share the helpers, oldest first.

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>

namespace kernelscan {

class task_group {
 public:
  // Queues the n tasks; `fn` must outlive the group.
  task_group(std::size_t n, const std::function<void(std::size_t)>& fn);
  // Waits for the tasks (their exceptions are lost: call wait() to see them).
  ~task_group();
  task_group(const task_group&) = delete;
  task_group& operator=(const task_group&) = delete;

  // Runs the tasks not yet taken, then waits for the others; rethrows the first exception a
  // task threw (once).
  void wait();

  // Helper threads of the process (0 where it has one core).
  static std::size_t helpers();

  struct state;

 private:
  std::shared_ptr<state> m_state;
  bool m_waited = false;
};

}  // namespace kernelscan

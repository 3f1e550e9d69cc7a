#pragma once
// Keeps the store to the jobs of the last --retention-days: a thread of its own deletes, every
// tenth of that time (at least a second apart, at most an hour), the jobs that ended before it,
// one job a transaction, so that a sweep over thousands of jobs never holds the store for long,
// and announces each on the event stream (`job_deleted`). Queued and running jobs are never
// deleted, however old. In a fleet each node sweeps by its own setting: the shortest wins, and a
// job two nodes delete at once is deleted once.
//
// Threading: sweep() is called by the thread start() starts (or by a test, without it); stop()
// from any thread.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "server/clock.hpp"
#include "server/event_hub.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

// Deletes job `id` (job_store::delete_job) and, if it went, tells every event stream
// (`job_deleted`): a deletion by request and one by the sweep are announced alike.
delete_outcome delete_and_announce(job_store& store, event_hub& events, std::int64_t id);

class retention {
 public:
  // `keep`: how long a job is kept after it ended; zero or less keeps every job.
  retention(job_store& store, event_hub& events, const clock& time, std::chrono::milliseconds keep);
  ~retention();
  retention(const retention&) = delete;
  retention& operator=(const retention&) = delete;

  // Starts the thread that sweeps at once and then every period(); none if every job is kept.
  void start();

  // Deletes the jobs that ended longer than `keep` ago; returns how many it deleted. A store
  // that cannot be reached ends the sweep (logged); the next one tries again.
  std::size_t sweep();
  void stop();

  // How often the thread sweeps, for a given `keep`.
  static std::chrono::milliseconds period(std::chrono::milliseconds keep);

 private:
  void run();

  job_store& m_store;
  event_hub& m_events;
  const clock& m_clock;
  std::chrono::milliseconds m_keep;
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stopping = false;
  std::thread m_thread;
};

}  // namespace kernelscan

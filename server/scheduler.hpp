#pragma once
// The job queue and the worker supervisor (DESIGN.md §1): one `kernelscan worker` child per
// device, fed one point at a time over JSON lines; every result is committed to the store as it
// arrives. Queue order: priority (higher first), then submission order. A worker that crashes
// is restarted (with backoff if it keeps failing to start); the point it was measuring is tried
// once more on the fresh worker and then recorded as `device_fault`. A point that outlives its
// watchdog deadline is recorded as `timeout` and its worker replaced. Jobs a crash or shutdown
// interrupted resume at their first unmeasured point.
//
// Threading: the scheduler's state lives on the io_context's thread. The public methods marked
// thread-safe may be called from any thread (HTTP handlers); they post to that thread.

#include <asio.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/worker_protocol.hpp"
#include "engine/device_info.hpp"
#include "server/config.hpp"
#include "server/event_hub.hpp"
#include "server/job_queue.hpp"
#include "server/job_waiters.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

// measuring: the worker is measuring the device's roofline (between jobs).
enum class device_state { starting, idle, busy, measuring, restarting, failed };
std::string_view to_string(device_state s);

// A device as the API shows it.
struct device_view {
  device_info info;
  device_state state = device_state::starting;
  std::optional<std::int64_t> current_job;
  int worker_pid = 0;
  std::uint64_t worker_restarts = 0;
  std::uint64_t points_measured = 0;
  std::string last_error;
};

class scheduler {
 public:
  // Serves `gpus` (found by the daemon's probe; indices 0..n-1) with the GPU engine, then
  // config.mock_devices mock devices when config.engine asks for them (see serve_config).
  scheduler(asio::io_context& io, job_store& store, job_waiters& waiters, event_hub& events,
            const serve_config& config, const std::vector<device_info>& gpus = {});
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;
  ~scheduler();

  // Requeues jobs a previous run left running, loads the queue and starts the workers. Call
  // once, on the io thread or before io.run().
  void start();

  // Thread-safe. A job was stored and may be scheduled.
  void enqueue(std::int64_t id);
  // Thread-safe. The store recorded a cancel request: drop a queued job, or stop a running one
  // after its current point.
  void cancel(std::int64_t id);
  // Thread-safe. Stop dispatching, let current points finish (up to drain_timeout_s), requeue
  // the jobs they belong to, stop the workers, then run `done` on the io thread.
  void shutdown(std::function<void()> done);

  // Thread-safe. Measures device `index`'s roofline again once its current job ends; false if
  // there is no such device.
  bool request_roofline(int index);

  // Thread-safe snapshots.
  std::vector<device_view> devices() const;
  bool ready() const;
  std::uint64_t points_measured() const { return m_points_measured; }
  std::uint64_t worker_restarts() const { return m_worker_restarts; }
  // Measured points not yet in the store (grows while storage fails).
  std::uint64_t points_unstored() const { return m_points_unstored; }

 private:
  struct active_job;
  struct outstanding_point;
  struct device_slot;

  std::vector<std::string> worker_argv(const device_slot& slot) const;
  void spawn(device_slot& slot);
  void on_worker_line(device_slot& slot, std::string_view line);
  void on_worker_exit(device_slot& slot, const std::string& how);
  void schedule_restart(device_slot& slot);
  void dispatch();
  bool matches(const pending_job& job, const device_slot& slot) const;
  void start_job(device_slot& slot, const pending_job& job);
  // Sends the job's next points, or ends the job when none are left.
  void advance(device_slot& slot);
  void arm_watchdog(device_slot& slot);
  // Commits the measured points waiting in m_unflushed; false (and a retry armed) if storage
  // failed.
  bool flush_results();
  // Queues a measured point (its job_id and index are the slot's current point) for the store.
  void point_done(device_slot& slot, result_row row);
  void record_failure(device_slot& slot, const std::string& type, const std::string& message);
  void finish_job(device_slot& slot, job_status status, std::optional<point_error> error);
  void publish();
  // Publishes the job's stored state as a "job" event (a state change).
  void announce(std::int64_t id);
  // Publishes a "points" event per job for the rows in m_unflushed (just committed).
  void announce_points();
  void check_drained();
  // A fresh worker: judge by the stored roofline, or measure one before the first job.
  void load_roofline(device_slot& slot);
  void roofline_measured(device_slot& slot, const worker_protocol::worker_message& msg);

  asio::io_context& m_io;
  job_store& m_store;
  job_waiters& m_waiters;
  event_hub& m_events;
  serve_config m_config;

  std::vector<std::unique_ptr<device_slot>> m_slots;
  job_queue m_queue;
  std::uint64_t m_next_seq = 1;
  std::vector<result_row> m_unflushed;
  asio::steady_timer m_flush_timer{m_io};
  bool m_flush_armed = false;
  bool m_storage_failing = false;  // the last flush failed: log once, and the recovery
  bool m_draining = false;
  std::function<void()> m_on_drained;
  std::unique_ptr<asio::steady_timer> m_drain_timer;

  mutable std::mutex m_view_mutex;
  std::vector<device_view> m_view;
  std::atomic<std::uint64_t> m_points_measured{0};
  std::atomic<std::uint64_t> m_worker_restarts{0};
  std::atomic<std::uint64_t> m_points_unstored{0};
};

}  // namespace kernelscan

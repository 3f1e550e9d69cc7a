#pragma once
// Runs jobs on this node's devices (DESIGN.md §1, §7): one `kernelscan worker` child per device,
// fed points over JSON lines; every result is committed to the store as it arrives. The parts,
// each in a file of its own: dispatch (a device that is idle claims a queued job from the store,
// which keeps the one queue of the fleet), worker supervision (worker_supervisor, point_window:
// restarts, watchdogs, which point a crash is blamed on), group commit of measured points, the
// result cache, rooflines, events (job_events), and the node's heartbeat, which renews the
// leases of the jobs it runs and requeues jobs whose node died.
//
// A worker that crashes is restarted; the point it was measuring is tried once more on the
// fresh worker and then recorded as `device_fault`. A point that outlives its watchdog
// deadline is recorded as `timeout` and its worker replaced. Jobs a crash, a shutdown or a dead
// node interrupted resume at their first unmeasured point, on whichever node claims them.
//
// Threading: the scheduler's state lives on the io_context's thread. The public methods marked
// thread-safe may be called from any thread (HTTP handlers, the store's event thread); they
// post to that thread.

#include <asio.hpp>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/worker_protocol.hpp"
#include "engine/device_info.hpp"
#include "server/clock.hpp"
#include "server/config.hpp"
#include "server/device_view.hpp"
#include "server/dispatcher.hpp"
#include "server/event_hub.hpp"
#include "server/fleet_offline.hpp"
#include "server/group_commit.hpp"
#include "server/job_events.hpp"
#include "server/job_waiters.hpp"
#include "server/node_heartbeat.hpp"
#include "server/result_cache.hpp"
#include "server/rooflines.hpp"
#include "storage/job_store.hpp"

namespace kernelscan {

class scheduler {
 public:
  // Serves `gpus` (found by the daemon's probe; indices 0..n-1) with the GPU engine, then
  // config.mock_devices mock devices when config.engine asks for them (see serve_config), as
  // node config.node of the store (which the daemon has joined).
  scheduler(asio::io_context& io, job_store& store, job_waiters& waiters, event_hub& events,
            const serve_config& config, const std::vector<device_info>& gpus = {},
            const clock& time = default_clock());
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;
  ~scheduler();

  // Requeues the jobs this node left running when it last stopped, starts the workers and the
  // heartbeat. Call once, on the io thread or before io.run().
  void start();

  // Thread-safe. A job was stored and may be dispatched.
  void enqueue(std::int64_t id);
  // Thread-safe. The store recorded a cancel request: a job running here stops after its
  // current point (a queued one the store cancelled itself).
  void cancel(std::int64_t id);
  // Thread-safe. Another node changed a job: a queued one may be claimed here, a running one of
  // this node's may have been asked to cancel.
  void job_changed_elsewhere(const job_record& job);
  // Thread-safe. Stop dispatching, let current points finish (up to drain_timeout_s), requeue
  // the jobs they belong to, stop the workers and leave the fleet, then run `done` on the io
  // thread.
  void shutdown(std::function<void()> done);

  // Thread-safe. Measures device `index`'s roofline again once its current job ends; false if
  // there is no such device.
  bool request_roofline(int index);

  // Thread-safe snapshots.
  std::vector<device_view> devices() const;
  bool ready() const;
  const std::string& node() const { return m_config.node; }
  std::uint64_t points_measured() const { return m_points_measured; }
  std::uint64_t worker_restarts() const { return m_worker_restarts; }
  // Measured points not yet in the store (grows while storage fails).
  std::uint64_t points_unstored() const { return m_points_unstored; }

  static const clock& default_clock();

 private:
  struct active_job;
  struct device_slot;

  std::vector<std::string> worker_argv(const device_slot& slot) const;
  void on_worker_line(device_slot& slot, std::string_view line);
  void on_worker_exit(device_slot& slot, const std::string& how);
  void dispatch();
  // False when the store could not start it (the job waits); dispatch then stops trying.
  bool start_job(device_slot& slot, claimed_job&& claimed);
  // Sends the job's next points, or ends the job when none are left.
  void advance(device_slot& slot);
  // Gives up the points of the slot's job not yet sent, once those at its worker are answered and
  // every measured point is stored: "S of N points were not measured"; nothing while it waits
  // for those (advance() runs again then).
  std::optional<std::string> skip_the_rest(device_slot& slot);
  void arm_watchdog(device_slot& slot);
  // Commits the measured points held; false (and a retry armed) if storage failed.
  bool flush_results();
  // Flushes the held points; when that ends a storage outage, the jobs that waited go on.
  void store_held_points();
  void arm_flush();
  void point_done(device_slot& slot, std::vector<result_row> rows);
  void record_failure(device_slot& slot, std::uint64_t index, const std::string& type,
                      const std::string& message);
  // Ends the slot's job in the store, or retries every second while the store cannot be
  // reached (the device waits meanwhile).
  void finish_job(device_slot& slot, job_status status, std::optional<point_error> error);
  void try_finish(device_slot& slot);
  // The slot's job is no longer this node's (its lease was lost): forget it.
  void abandon_job(device_slot& slot);
  void stop_job(device_slot& slot);
  void publish();
  // In a fleet, writes this node's devices to the store when what a device's event says
  // changed since the store last had them (a claim, a job's end, a fault, a roofline), so that
  // other nodes list them as they are, not as the last heartbeat found them. Before the
  // change's events go out, so that whoever reads the devices on one sees the change.
  // `events`: the devices' device_event()s.
  void share_devices(const std::vector<device_view>& view, const std::vector<json>& events);
  // A "device" event for each device whose event differs from the last one it announced.
  void announce_devices(const std::vector<json>& events);
  // In a fleet, at each heartbeat: a "device" event on this node's streams for each other
  // node's device gone offline since the last.
  void watch_other_nodes();
  std::vector<device_record> device_records(const std::vector<device_view>& view) const;
  void check_drained();
  void beat();
  void arm_heartbeat();
  // Whether this node's leases are surely still its own: renewed within half a lease. Two nodes
  // never run one job at once: past that, this node sends no more points until a heartbeat
  // gets through (and tells it which jobs it lost).
  bool leases_fresh() const;
  // A fresh worker: judge by the stored roofline, or measure one before the first job.
  void load_roofline(device_slot& slot);
  void roofline_measured(device_slot& slot, const worker_protocol::worker_message& msg);
  device_slot* slot_running(std::int64_t job_id);

  asio::io_context& m_io;
  job_store& m_store;
  job_waiters& m_waiters;
  serve_config m_config;
  const clock& m_clock;
  job_events m_events;
  dispatcher m_dispatcher;
  group_commit m_commit;
  result_cache m_cache;
  rooflines m_rooflines;
  node_heartbeat m_heartbeat;
  offline_watch m_offline_watch;  // the other nodes' devices, for their going offline

  std::vector<std::unique_ptr<device_slot>> m_slots;
  std::uint64_t m_next_seq = 1;
  asio::steady_timer m_flush_timer{m_io};
  bool m_flush_armed = false;
  asio::steady_timer m_heartbeat_timer{m_io};
  clock::time_point m_renewed_at;  // when the last heartbeat that got through was sent
  bool m_draining = false;
  std::function<void()> m_on_drained;
  std::unique_ptr<asio::steady_timer> m_drain_timer;

  // Each device's event as the store last got the device (share_devices), and as the event
  // stream last did (announce_devices).
  std::vector<json> m_shared;
  std::vector<json> m_announced;

  mutable std::mutex m_view_mutex;
  std::vector<device_view> m_view;
  std::atomic<std::uint64_t> m_points_measured{0};
  std::atomic<std::uint64_t> m_worker_restarts{0};
  std::atomic<std::uint64_t> m_points_unstored{0};
};

}  // namespace kernelscan

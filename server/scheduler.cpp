#include "server/scheduler.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <deque>

#include "api/device_codec.hpp"
#include "api/job_codec.hpp"
#include "api/job_spec_codec.hpp"
#include "api/result_codec.hpp"
#include "api/worker_protocol.hpp"
#include "engine/fitness.hpp"
#include "engine/job_plan.hpp"
#include "server/worker_process.hpp"

namespace kernelscan {
namespace {

using namespace std::chrono_literals;

// Tries of a point whose worker died under it: once more on a fresh worker, in case something
// else killed it, then it is the kernel's fault.
constexpr int k_max_attempts = 2;

// Points queued at a worker at once, by how long a point takes (see advance()).
std::size_t window_for(double point_ms) {
  if (point_ms < 2) return 64;
  if (point_ms < 20) return 4;
  return 1;
}

// Group commit: measured points reach SQLite within this window, in one transaction of up to
// k_max_group_commit rows. A commit costs about as much as tens of rows, so committing each
// point alone would cap the daemon at a few thousand points per second.
constexpr auto k_group_commit_window = std::chrono::milliseconds(2);
constexpr std::size_t k_max_group_commit = 256;
// Measured points held in memory while storage fails, before workers are paused.
constexpr std::size_t k_max_unflushed = 10000;

asio::steady_timer::duration seconds(double s) {
  return std::chrono::duration_cast<asio::steady_timer::duration>(std::chrono::duration<double>(s));
}

// Failures that doom every point of the job: stop at once instead of repeating them.
bool fatal_to_job(const std::string& type) {
  return type == "invalid_spec" || type == "compile_error";
}

// The kind of device: engine, part and driver.
std::string device_kind(const device_info& d) {
  return std::string(to_string(d.engine)) + "|" + d.name + "|" + d.arch + "|" + d.driver;
}

// Names a device for its stored roofline: another part, driver or slot is measured anew.
std::string roofline_key(const device_info& d) {
  return device_kind(d) + "|" + std::to_string(d.index);
}

// What a job measures and where (DESIGN.md §4, the result cache): its spec without what does
// not change a measurement (name, labels, priority, placement, the seed, the cache switch), the
// kind of device and driver (not its index: any of identical GPUs will do), and when the
// device's roofline was measured (re-measuring it changes the analysis). Kept as text, not a
// hash, so that no two different measurements can share a key.
std::string cache_key(const job_spec& spec, const device_info& d) {
  json j = to_json(spec);
  for (const char* k : {"name", "labels", "priority", "device", "engine", "seed", "cache"})
    j.erase(k);
  return j.dump() + "\n" + device_kind(d) + "|" +
         (d.measured ? std::to_string(d.measured->measured_ms) : "datasheet");
}

}  // namespace

std::string_view to_string(device_state s) {
  switch (s) {
    case device_state::starting:
      return "starting";
    case device_state::idle:
      return "idle";
    case device_state::busy:
      return "busy";
    case device_state::measuring:
      return "measuring";
    case device_state::restarting:
      return "restarting";
    case device_state::failed:
      return "failed";
  }
  return "?";
}

struct scheduler::active_job {
  pending_job info;
  std::unique_ptr<job_plan> plan;
  std::string spec_json;
  std::vector<std::uint64_t> todo;  // unmeasured indices, ascending
  std::size_t next = 0;             // todo[next] is the next point to send
  std::uint64_t total = 0;
  std::optional<point_error> first_failure;
  std::uint64_t first_failure_index = 0;
  bool cancel = false;
};

// A measure request sent to the worker and not yet answered. The worker measures them in
// order; the first is being measured, the others wait in its pipe.
struct scheduler::outstanding_point {
  std::uint64_t index = 0;
  std::uint64_t seq = 0;
};

struct scheduler::device_slot {
  device_slot(asio::io_context& io, int i) : index(i), watchdog(io), restart_timer(io) {}
  int index;
  int ordinal = 0;  // the GPU's number in its runtime (hip), or the mock device's index
  device_info info;
  device_state state = device_state::starting;
  std::unique_ptr<worker_process> proc;
  bool worker_ready = false;
  std::unique_ptr<active_job> job;
  bool job_loaded = false;
  std::deque<outstanding_point> outstanding;
  std::chrono::steady_clock::time_point head_started;  // when outstanding.front() began
  double last_point_ms = 1e9;  // the worker's time on the last point; decides the window
  // After a worker died with several points queued, it is unknown which one it died under:
  // points up to this index go one at a time, so that the next failure has a clear culprit.
  std::optional<std::uint64_t> careful_through;
  std::optional<std::uint64_t> crashed_index;  // the point a worker last died under
  int crashes = 0;                             // ... and how many times
  bool timed_out = false;
  asio::steady_timer watchdog;
  asio::steady_timer restart_timer;
  int start_failures = 0;
  std::uint64_t restarts = 0;
  std::uint64_t points = 0;
  std::string last_error;
  bool roofline_wanted = false;   // measure the roofline before the next job
  bool roofline_running = false;  // the worker is measuring it
};

scheduler::scheduler(asio::io_context& io, job_store& store, job_waiters& waiters,
                     event_hub& events, const serve_config& config,
                     const std::vector<device_info>& gpus)
    : m_io(io), m_store(store), m_waiters(waiters), m_events(events), m_config(config) {
  for (const auto& gpu : gpus) {
    auto slot = std::make_unique<device_slot>(io, int(m_slots.size()));
    slot->ordinal = gpu.index;
    slot->info = gpu;
    slot->info.index = slot->index;
    m_slots.push_back(std::move(slot));
  }
  const bool mocks = serves_mock_devices(config, gpus.size());
  const device_model* model = find_device_model(config.mock_model);
  for (int i = 0; mocks && i < config.mock_devices; ++i) {
    auto slot = std::make_unique<device_slot>(io, int(m_slots.size()));
    slot->ordinal = slot->index;
    // Until the worker reports, show what it will be.
    slot->info.index = slot->index;
    slot->info.engine = engine_kind::mock;
    if (model) {
      slot->info.name = std::string(model->name) + " (mock)";
      slot->info.vendor = std::string(model->vendor);
      slot->info.arch = std::string(model->arch);
      slot->info.model = std::string(model->key);
      slot->info.compute_units = model->compute_units;
      slot->info.clock_mhz = model->clock_mhz;
      slot->info.memory_bytes = model->memory_bytes;  // submissions are checked against it
      slot->info.l2_bytes = model->l2_bytes;
      slot->info.llc_bytes = model->llc_bytes;
      slot->info.datasheet = model->peaks;
    }
    m_slots.push_back(std::move(slot));
  }
}

scheduler::~scheduler() {
  for (auto& slot : m_slots) {
    slot->watchdog.cancel();
    slot->restart_timer.cancel();
    slot->proc.reset();
  }
}

void scheduler::start() {
  for (const auto& job : m_store.pending()) {
    if (job.status == job_status::running) {
      if (job.cancel_requested) {
        m_store.finish(job.id, job_status::cancelled,
                       point_error{"cancelled", "cancelled while the daemon was down"},
                       unix_time_ms());
        continue;
      }
      m_store.requeue(job.id);
      spdlog::info("job {} was running when the daemon stopped; it resumes", job.id);
    }
    pending_job queued = job;
    queued.status = job_status::queued;
    m_queue.push(queued);
  }
  for (auto& slot : m_slots)
    spawn(*slot);
  publish();
}

std::vector<std::string> scheduler::worker_argv(const device_slot& slot) const {
  const bool gpu = slot.info.engine == engine_kind::hip;
  std::vector<std::string> argv{m_config.worker_executable,
                                "worker",
                                "--device",
                                std::to_string(slot.ordinal),
                                "--engine",
                                gpu ? "hip" : "mock",
                                "--mock-model",
                                m_config.mock_model,
                                "--log-level",
                                m_config.log_level,
                                "--log-format",
                                m_config.log_format};
  if (m_config.allow_fault_injection) argv.push_back("--allow-fault-injection");
  return argv;
}

void scheduler::spawn(device_slot& slot) {
  slot.worker_ready = false;
  slot.job_loaded = false;
  slot.timed_out = false;
  try {
    slot.proc = std::make_unique<worker_process>(
        m_io, worker_argv(slot),
        [this, &slot](std::string_view line) { on_worker_line(slot, line); },
        [this, &slot](const std::string& how) { on_worker_exit(slot, how); });
  } catch (const std::exception& e) {
    slot.last_error = std::string("cannot start worker: ") + e.what();
    spdlog::error("device {}: {}", slot.index, slot.last_error);
    ++slot.start_failures;
    schedule_restart(slot);
    return;
  }
  slot.state = slot.restarts == 0 ? device_state::starting : device_state::restarting;
  slot.watchdog.expires_after(seconds(m_config.worker_start_timeout_s));
  slot.watchdog.async_wait([this, &slot](const asio::error_code& ec) {
    if (ec || slot.worker_ready || !slot.proc) return;
    slot.last_error = "worker did not report ready in time";
    spdlog::error("device {}: {}", slot.index, slot.last_error);
    slot.proc->kill();
  });
  publish();
}

void scheduler::schedule_restart(device_slot& slot) {
  if (m_draining) return;
  // Immediate after a crash under load; backing off while the worker cannot even start.
  const auto delay =
      slot.start_failures == 0
          ? std::chrono::milliseconds(0)
          : std::chrono::milliseconds(std::min(10000, 100 << std::min(slot.start_failures, 7)));
  slot.state = slot.start_failures >= 5 ? device_state::failed : device_state::restarting;
  publish();
  slot.restart_timer.expires_after(delay);
  slot.restart_timer.async_wait([this, &slot](const asio::error_code& ec) {
    if (ec || m_draining) return;
    ++slot.restarts;
    ++m_worker_restarts;
    spawn(slot);
  });
}

void scheduler::on_worker_line(device_slot& slot, std::string_view line) {
  worker_protocol::worker_message msg;
  try {
    msg = worker_protocol::parse_worker_line(line);
  } catch (const worker_protocol::protocol_error& e) {
    slot.last_error = e.what();
    spdlog::error("device {}: {}; replacing the worker", slot.index, e.what());
    slot.proc->kill();
    return;
  }
  using kind = worker_protocol::worker_message::kind;
  if (msg.type == kind::ready) {
    slot.watchdog.cancel();
    slot.worker_ready = true;
    slot.start_failures = 0;
    slot.info = msg.device;
    slot.info.index = slot.index;
    spdlog::info("device {}: worker {} ready: {}", slot.index, slot.proc->pid(), slot.info.name);
    load_roofline(slot);
    if (slot.job) {
      slot.state = device_state::busy;
      advance(slot);
    } else {
      slot.state = device_state::idle;
      dispatch();
    }
    publish();
    return;
  }
  if (msg.type == kind::roofline) {
    roofline_measured(slot, msg);
    return;
  }
  if (slot.outstanding.empty() || msg.seq != slot.outstanding.front().seq) {
    slot.last_error = "the worker answered out of order";
    spdlog::error("device {}: reply to request {} out of order; replacing the worker", slot.index,
                  msg.seq);
    slot.proc->kill();
    return;
  }
  const std::uint64_t index = slot.outstanding.front().index;
  if (msg.type == kind::dropped) {
    // Not measured, as asked (cancel or shutdown): nothing to store; a requeued job measures
    // it after the restart.
    slot.outstanding.pop_front();
    if (slot.outstanding.empty()) slot.watchdog.cancel();
    advance(slot);
    return;
  }
  if (msg.type == kind::failure) {
    if (fatal_to_job(msg.error_type)) {
      flush_results();
      finish_job(slot, job_status::failed, point_error{msg.error_type, msg.error_message});
      return;
    }
    record_failure(slot, msg.error_type, msg.error_message);
    return;
  }
  const auto& r = msg.result;
  if (r.value("index", std::uint64_t(-1)) != index) {
    record_failure(slot, "internal", "the worker answered for another point");
    return;
  }
  const bool ok = r.value("status", "") == "ok";
  std::optional<double> median;
  if (ok && r.contains("time_us") && r["time_us"].is_object()) {
    median = r["time_us"].value("median", 0.0);
  }
  if (!ok && !slot.job->first_failure && r.contains("error") && r["error"].is_object()) {
    slot.job->first_failure =
        point_error{r["error"].value("type", "?"), r["error"].value("message", "")};
    slot.job->first_failure_index = index;
  }
  slot.last_point_ms = msg.wall_ms;
  result_row row;
  row.ok = ok;
  row.median_us = median;
  row.params_json = r.contains("params") ? r["params"].dump() : "{}";
  row.result_json = std::move(msg.result_text);
  row.score = score_of(r);
  row.flags = flags_of(r);
  point_done(slot, std::move(row));
}

void scheduler::on_worker_exit(device_slot& slot, const std::string& how) {
  const bool was_ready = slot.worker_ready;
  slot.worker_ready = false;
  if (slot.roofline_running) {
    // Not tried again by itself: a measurement that kills its worker would loop.
    slot.roofline_running = false;
    slot.roofline_wanted = false;
    slot.last_error = "the worker " + how + " while measuring the roofline";
    spdlog::error("device {}: {}", slot.index, slot.last_error);
  }
  slot.watchdog.cancel();
  // Destroy the process object once its callback has returned.
  asio::post(m_io, [p = std::move(slot.proc)] {});
  if (!was_ready) ++slot.start_failures;

  if (!slot.outstanding.empty() && slot.job) {
    const std::uint64_t index = slot.outstanding.front().index;
    const int crashes = (slot.crashed_index == index ? slot.crashes : 0) + 1;
    if (slot.outstanding.size() > 1) {
      // Its replies come in batches, so the points it had may be done but unreported: measure
      // them again one at a time to find the one at fault.
      spdlog::warn(
          "device {}: worker {} with {} points of job {} queued; re-measuring them one "
          "at a time",
          slot.index, how, slot.outstanding.size(), slot.job->info.id);
      slot.careful_through = slot.outstanding.back().index;
    } else if (slot.timed_out) {
      spdlog::error("device {}: job {} point {} timed out; worker replaced", slot.index,
                    slot.job->info.id, index);
      record_failure(slot, "timeout",
                     "the point did not finish within its watchdog deadline; the worker was "
                     "killed and replaced");
    } else if (crashes < k_max_attempts && !m_draining) {
      spdlog::warn("device {}: worker {} while measuring job {} point {}; retrying it", slot.index,
                   how, slot.job->info.id, index);
      slot.crashed_index = index;
      slot.crashes = crashes;
    } else if (!m_draining) {
      spdlog::error("device {}: worker {} while measuring job {} point {}", slot.index, how,
                    slot.job->info.id, index);
      record_failure(slot, "device_fault",
                     "the worker " + how + " while measuring this point (tried " +
                         std::to_string(crashes) + " times)");
    }
    // Requests the worker never started go out again to its successor.
    if (slot.job) {
      slot.job->next -= slot.outstanding.size();
      slot.outstanding.clear();
    }
  } else if (!m_draining) {
    slot.last_error = "worker " + how;
    spdlog::warn("device {}: worker {}", slot.index, how);
  }
  slot.outstanding.clear();
  slot.timed_out = false;
  if (m_draining) {
    check_drained();
    return;
  }
  schedule_restart(slot);
}

bool scheduler::matches(const pending_job& job, const device_slot& slot) const {
  if (job.requested_device && *job.requested_device != slot.index) return false;
  if (job.engine == engine_kind::any) return true;
  return job.engine == slot.info.engine;
}

void scheduler::enqueue(std::int64_t id) {
  asio::post(m_io, [this, id] {
    for (const auto& slot : m_slots) {
      if (slot->job && slot->job->info.id == id) return;
    }
    if (m_queue.contains(id)) return;
    auto rec = m_store.get(id);
    if (!rec || rec->status != job_status::queued) return;
    m_queue.push({rec->id, rec->priority, rec->engine, rec->requested_device, rec->status,
                  rec->cancel_requested});
    dispatch();
  });
}

void scheduler::cancel(std::int64_t id) {
  asio::post(m_io, [this, id] {
    if (m_queue.remove(id)) {
      m_waiters.notify(id);
      return;  // the HTTP handler announced the cancel
    }
    for (auto& slot : m_slots) {
      if (!slot->job || slot->job->info.id != id) continue;
      slot->job->cancel = true;
      // Between points (waiting for a worker), stop now; otherwise after the current point:
      // the worker drops the requests queued behind it.
      if (slot->outstanding.empty()) {
        advance(*slot);
      } else if (slot->outstanding.size() > 1 && slot->proc) {
        slot->proc->send(worker_protocol::drop_line(id));
      }
    }
  });
}

void scheduler::dispatch() {
  if (m_draining) return;
  for (auto& slot : m_slots) {
    if (slot->job || !slot->worker_ready || slot->roofline_running) continue;
    if (slot->roofline_wanted) {
      // Between jobs, so that no measurement shares the device with it.
      slot->roofline_running = true;
      slot->state = device_state::measuring;
      spdlog::info("device {}: measuring its roofline", slot->index);
      slot->proc->send(worker_protocol::measure_roofline_line());
      continue;
    }
    // A job that cannot start (cancelled meanwhile, or ended at once) leaves the device free
    // for the next.
    while (!slot->job) {
      auto job = m_queue.pop_first([&](const pending_job& j) { return matches(j, *slot); });
      if (!job) break;
      start_job(*slot, *job);
    }
  }
  publish();
}

void scheduler::start_job(device_slot& slot, const pending_job& job) {
  if (!m_store.start(job.id, slot.index, unix_time_ms())) return;  // cancelled meanwhile
  announce(job.id);
  auto active = std::make_unique<active_job>();
  active->info = job;
  try {
    active->spec_json = m_store.spec_json(job.id).value_or("");
    active->plan = std::make_unique<job_plan>(
        compile_plan(parse_job_spec(parse_json(active->spec_json), spec_limits::stored()),
                     spec_limits::stored().plan));
  } catch (const std::exception& e) {
    spdlog::error("job {}: stored spec does not load: {}", job.id, e.what());
    m_store.finish(job.id, job_status::failed,
                   point_error{"internal", std::string("stored spec does not load: ") + e.what()},
                   unix_time_ms());
    announce(job.id);
    m_waiters.notify(job.id);
    return;
  }
  active->total = active->plan->size();
  const auto done = m_store.result_indices(job.id);
  const auto& spec = active->plan->spec();
  const std::string key = cache_key(spec, slot.info);
  std::int64_t cached_from = 0;  // 0: measure
  try {
    m_store.set_cache_key(job.id, key);
    if (spec.cache && done.empty()) {
      if (const auto hit = m_store.find_cached(key, job.id)) {
        cached_from = m_store.copy_cached_results(*hit, job.id, unix_time_ms());
      }
    }
  } catch (const storage_error& e) {
    spdlog::warn("job {}: result cache unavailable: {}", job.id, e.what());
    cached_from = 0;
  }
  if (cached_from != 0) {
    spdlog::info("job {}: {} points answered from the cache (job {})", job.id, active->total,
                 cached_from);
    slot.job = std::move(active);
    slot.job_loaded = false;
    finish_job(slot, job_status::succeeded, std::nullopt);
    return;
  }
  active->todo.reserve(active->total - done.size());
  std::size_t d = 0;
  for (std::uint64_t i = 0; i < active->total; ++i) {
    if (d < done.size() && done[d] == i) {
      ++d;
      continue;
    }
    active->todo.push_back(i);
  }
  spdlog::info("job {} starts on device {}: {} of {} points to measure", job.id, slot.index,
               active->todo.size(), active->total);
  slot.job = std::move(active);
  slot.job_loaded = false;
  slot.last_point_ms = 1e9;
  slot.careful_through.reset();
  slot.state = device_state::busy;
  advance(slot);
}

void scheduler::advance(device_slot& slot) {
  auto& job = *slot.job;
  if (m_draining) {
    check_drained();
    return;
  }
  if (job.cancel) {
    if (!slot.outstanding.empty()) return;  // stop after the points already at the worker
    if (!flush_results()) return;           // the flush retry calls back here
    const std::uint64_t measured = job.total - (job.todo.size() - job.next);
    finish_job(slot, job_status::cancelled,
               point_error{"cancelled", "cancelled after " + std::to_string(measured) + " of " +
                                            std::to_string(job.total) + " points"});
    return;
  }
  if (job.next >= job.todo.size()) {
    if (!slot.outstanding.empty()) return;
    // A job is finished only once all its points are in the store.
    if (!flush_results()) return;
    const auto rec = m_store.get(job.info.id);
    const std::uint64_t failed = rec ? rec->progress.failed : 0;
    if (failed == 0) {
      finish_job(slot, job_status::succeeded, std::nullopt);
    } else {
      std::string msg =
          std::to_string(failed) + " of " + std::to_string(job.total) + " points failed";
      if (job.first_failure) {
        msg += "; the first, point " + std::to_string(job.first_failure_index) + ": " +
               job.first_failure->type + ": " + job.first_failure->message;
      }
      finish_job(slot, job_status::failed, point_error{"points_failed", msg});
    }
    return;
  }
  if (!slot.worker_ready) return;                     // resumes when the worker reports ready
  if (m_unflushed.size() >= k_max_unflushed) return;  // storage is failing: wait for it
  if (!slot.job_loaded) {
    slot.proc->send(worker_protocol::job_line(job.info.id, job.spec_json));
    slot.job_loaded = true;
  }
  // Keep short points queued at the worker, topped up in bursts, so that neither process
  // sleeps between points (each wake-up of the other process costs tens of microseconds or
  // more); long points go one at a time, so that a cancel or a shutdown waits for one point.
  const std::size_t window = slot.careful_through ? 1 : window_for(slot.last_point_ms);
  if (slot.outstanding.size() > window / 2) return;
  std::string lines;
  while (slot.outstanding.size() < window && job.next < job.todo.size()) {
    const outstanding_point p{job.todo[job.next++], m_next_seq++};
    if (slot.outstanding.empty()) {
      slot.head_started = std::chrono::steady_clock::now();
      arm_watchdog(slot);
    }
    slot.outstanding.push_back(p);
    lines += worker_protocol::measure_line(p.seq, job.info.id, p.index);
  }
  if (!lines.empty()) slot.proc->send(std::move(lines));
}

void scheduler::arm_watchdog(device_slot& slot) {
  const auto& spec = slot.job->plan->spec();
  const double budget_s =
      m_config.point_timeout_s + 2.0 * (spec.timing.max_time_ms + spec.mock.delay_ms) / 1000.0;
  slot.watchdog.expires_at(slot.head_started + seconds(budget_s));
  slot.watchdog.async_wait([this, &slot](const asio::error_code& ec) {
    if (ec || slot.outstanding.empty() || !slot.proc) return;
    slot.timed_out = true;
    slot.proc->kill();
  });
}

void scheduler::record_failure(device_slot& slot, const std::string& type,
                               const std::string& message) {
  auto& job = *slot.job;
  const std::uint64_t index = slot.outstanding.front().index;
  auto params = job.plan->params(index);
  const std::string params_text = params_json(params).dump();
  auto result = failed_point(index, std::move(params), type, message);
  result.l2 = job.plan->spec().timing.l2;
  result.environment.device = slot.info.name;
  result.environment.driver = slot.info.driver;
  if (!job.first_failure) {
    job.first_failure = point_error{type, message};
    job.first_failure_index = index;
  }
  const json j = to_json(result);
  result_row row;
  row.params_json = params_text;
  row.result_json = j.dump();
  row.score = score_of(j);
  row.flags = flags_of(j);
  point_done(slot, std::move(row));
}

void scheduler::point_done(device_slot& slot, result_row row) {
  auto& job = *slot.job;
  const std::uint64_t index = slot.outstanding.front().index;
  const auto now = std::chrono::steady_clock::now();
  row.job_id = job.info.id;
  row.index = index;
  m_unflushed.push_back(std::move(row));
  if (m_unflushed.size() >= k_max_group_commit) {
    flush_results();
  } else if (!m_flush_armed) {
    m_flush_armed = true;
    m_flush_timer.expires_after(k_group_commit_window);
    m_flush_timer.async_wait([this](const asio::error_code& ec) {
      m_flush_armed = false;
      if (!ec) flush_results();
    });
  }
  if (slot.careful_through && index >= *slot.careful_through) slot.careful_through.reset();
  slot.outstanding.pop_front();
  if (!slot.outstanding.empty()) {
    slot.head_started = now;
    arm_watchdog(slot);
  } else {
    slot.watchdog.cancel();
  }
  ++slot.points;
  ++m_points_measured;
  advance(slot);
  publish();
}

bool scheduler::flush_results() {
  if (m_unflushed.empty()) return true;
  try {
    m_store.add_results(m_unflushed, unix_time_ms());
  } catch (const storage_error& e) {
    // Keep the measured rows and try again; advance() stops sending points while too many wait.
    m_points_unstored = m_unflushed.size();
    if (!m_storage_failing) {
      spdlog::error("cannot store {} measured point(s): {}; retrying every second",
                    m_unflushed.size(), e.what());
      m_storage_failing = true;
    }
    if (!m_flush_armed) {
      m_flush_armed = true;
      m_flush_timer.expires_after(1s);
      m_flush_timer.async_wait([this](const asio::error_code& ec) {
        m_flush_armed = false;
        if (ec || !flush_results()) return;
        for (auto& slot : m_slots) {
          if (slot->job && slot->outstanding.empty()) advance(*slot);
        }
      });
    }
    return false;
  }
  if (m_storage_failing) {
    spdlog::info("storage recovered; {} measured point(s) held in memory are stored",
                 m_unflushed.size());
    m_storage_failing = false;
  }
  announce_points();
  m_unflushed.clear();
  m_points_unstored = 0;
  return true;
}

void scheduler::finish_job(device_slot& slot, job_status status, std::optional<point_error> error) {
  const std::int64_t id = slot.job->info.id;
  try {
    const auto fitness =
        summarize_fitness(m_store.scored_points(id), slot.job->total,
                          status == job_status::succeeded, m_store.result_flags(id));
    m_store.finish(id, status, error, unix_time_ms(), fitness_json_text(fitness));
  } catch (const storage_error& e) {
    spdlog::error("job {}: cannot store its end ({}): {}", id, to_string(status), e.what());
  }
  spdlog::info("job {} {}{}", id, to_string(status), error ? ": " + error->message : "");
  slot.job.reset();
  slot.outstanding.clear();
  slot.watchdog.cancel();
  slot.state = slot.worker_ready ? device_state::idle : slot.state;
  publish();  // before waking waiters: whoever sees the job end sees the device free
  announce(id);
  m_waiters.notify(id);
  // Posted, not called: finish_job runs inside dispatch() (via start_job) and the queue must
  // not change under its loop.
  asio::post(m_io, [this] { dispatch(); });
}

void scheduler::load_roofline(device_slot& slot) {
  slot.roofline_running = false;
  std::optional<std::string> stored;
  try {
    stored = m_store.roofline(roofline_key(slot.info));
  } catch (const storage_error& e) {
    spdlog::warn("device {}: cannot read its stored roofline: {}", slot.index, e.what());
  }
  if (stored) {
    try {
      slot.info.measured = measured_roofline_from_json(parse_json(*stored));
      slot.proc->send(worker_protocol::set_roofline_line(*slot.info.measured));
      return;
    } catch (const std::exception& e) {
      spdlog::warn("device {}: stored roofline unreadable ({}); measuring it again", slot.index,
                   e.what());
    }
  }
  slot.roofline_wanted = true;
}

void scheduler::roofline_measured(device_slot& slot, const worker_protocol::worker_message& msg) {
  if (!slot.roofline_running) return;  // not asked for: ignore
  slot.roofline_running = false;
  slot.roofline_wanted = false;
  slot.state = device_state::idle;
  if (!msg.error_message.empty()) {
    slot.last_error = "roofline measurement failed: " + msg.error_message;
    spdlog::error("device {}: {}", slot.index, slot.last_error);
  } else {
    slot.info.measured = msg.roofline;
    spdlog::info("device {}: roofline measured: {:.0f} GB/s, {:.1f} TFLOP/s f16", slot.index,
                 msg.roofline.peaks.bandwidth_gbps, msg.roofline.peaks.f16_tflops);
    try {
      m_store.put_roofline(roofline_key(slot.info), to_json(msg.roofline).dump(),
                           msg.roofline.measured_ms);
    } catch (const storage_error& e) {
      spdlog::error("device {}: cannot store its roofline: {}", slot.index, e.what());
    }
  }
  publish();
  dispatch();
}

bool scheduler::request_roofline(int index) {
  if (index < 0 || std::size_t(index) >= m_slots.size()) return false;
  asio::post(m_io, [this, index] {
    auto& slot = *m_slots[std::size_t(index)];
    slot.roofline_wanted = true;
    dispatch();
  });
  return true;
}

void scheduler::shutdown(std::function<void()> done) {
  asio::post(m_io, [this, done = std::move(done)]() mutable {
    m_draining = true;
    m_on_drained = std::move(done);
    m_drain_timer = std::make_unique<asio::steady_timer>(m_io);
    m_drain_timer->expires_after(seconds(m_config.drain_timeout_s));
    m_drain_timer->async_wait([this](const asio::error_code& ec) {
      if (ec) return;
      for (auto& slot : m_slots) {
        if (!slot->outstanding.empty() && slot->job) {
          spdlog::warn(
              "job {} point {} did not finish within the drain timeout; it will be "
              "measured again after restart",
              slot->job->info.id, slot->outstanding.front().index);
          slot->outstanding.clear();
        }
      }
      check_drained();
    });
    for (auto& slot : m_slots) {
      slot->restart_timer.cancel();
      // Finish the point being measured, not the ones queued behind it.
      if (slot->job && slot->outstanding.size() > 1 && slot->proc) {
        slot->proc->send(worker_protocol::drop_line(slot->job->info.id));
      }
    }
    check_drained();
  });
}

void scheduler::check_drained() {
  if (!m_draining || !m_on_drained) return;
  for (const auto& slot : m_slots) {
    if (!slot->outstanding.empty()) return;
  }
  if (!flush_results()) {
    spdlog::error(
        "shutting down with {} measured point(s) not stored; they will be measured "
        "again",
        m_unflushed.size());
  }
  m_flush_timer.cancel();
  for (auto& slot : m_slots) {
    if (slot->job) {
      m_store.requeue(slot->job->info.id);
      announce(slot->job->info.id);
      spdlog::info("job {} interrupted by shutdown; it resumes at the next start",
                   slot->job->info.id);
      slot->job.reset();
    }
    slot->watchdog.cancel();
    slot->restart_timer.cancel();
    if (slot->proc) slot->proc->close_input();
  }
  if (m_drain_timer) m_drain_timer->cancel();
  auto done = std::move(m_on_drained);
  m_on_drained = nullptr;
  // Give workers a moment to exit on their own before their owners kill them.
  auto timer = std::make_shared<asio::steady_timer>(m_io, 200ms);
  timer->async_wait([this, timer, done = std::move(done)](const asio::error_code&) {
    for (auto& slot : m_slots)
      slot->proc.reset();
    publish();
    done();
  });
}

void scheduler::announce(std::int64_t id) {
  try {
    if (auto rec = m_store.get(id)) m_events.publish("job", job_json_text(*rec));
  } catch (const storage_error& e) {
    spdlog::warn("job {}: no event for its state change: {}", id, e.what());
  }
}

void scheduler::announce_points() {
  struct range {
    std::uint64_t first = UINT64_MAX, last = 0, stored = 0, failed = 0;
  };
  std::map<std::int64_t, range> jobs;
  for (const auto& row : m_unflushed) {
    auto& r = jobs[row.job_id];
    r.first = std::min(r.first, row.index);
    r.last = std::max(r.last, row.index);
    ++r.stored;
    if (!row.ok) ++r.failed;
  }
  for (const auto& [id, r] : jobs) {
    // Everything measured is stored now, so what the job has done is what it has sent, less
    // what its worker still holds.
    std::uint64_t done = 0, total = 0;
    for (const auto& slot : m_slots) {
      if (!slot->job || slot->job->info.id != id) continue;
      const auto& job = *slot->job;
      total = job.total;
      done = job.total - (job.todo.size() - job.next) - slot->outstanding.size();
    }
    m_events.publish("points", json{{"job_id", id},
                                    {"first_index", r.first},
                                    {"last_index", r.last},
                                    {"stored", r.stored},
                                    {"failed", r.failed},
                                    {"done", done},
                                    {"total", total}}
                                   .dump());
  }
}

void scheduler::publish() {
  std::vector<device_view> view;
  view.reserve(m_slots.size());
  for (const auto& slot : m_slots) {
    device_view v;
    v.info = slot->info;
    v.state = slot->state;
    if (slot->job) v.current_job = slot->job->info.id;
    v.worker_pid = slot->proc ? slot->proc->pid() : 0;
    v.worker_restarts = slot->restarts;
    v.points_measured = slot->points;
    v.last_error = slot->last_error;
    view.push_back(std::move(v));
  }
  std::lock_guard lock(m_view_mutex);
  m_view = std::move(view);
}

std::vector<device_view> scheduler::devices() const {
  std::lock_guard lock(m_view_mutex);
  return m_view;
}

bool scheduler::ready() const {
  std::lock_guard lock(m_view_mutex);
  if (m_view.empty()) return false;
  for (const auto& v : m_view) {
    if (v.state != device_state::idle && v.state != device_state::busy) return false;
  }
  return true;
}

}  // namespace kernelscan

#include "server/scheduler.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
#include <set>
#include <utility>

#include "api/device_codec.hpp"
#include "api/job_codec.hpp"
#include "api/job_spec_codec.hpp"
#include "api/result_codec.hpp"
#include "api/worker_protocol.hpp"
#include "engine/device_catalog.hpp"
#include "engine/fitness.hpp"
#include "engine/job_plan.hpp"
#include "server/point_budget.hpp"
#include "server/point_window.hpp"
#include "server/worker_supervisor.hpp"

namespace kernelscan {
namespace {

using namespace std::chrono_literals;

// How long a cancelled job's running point may take to end before its worker is killed.
constexpr auto k_cancel_grace = 3s;
// A job whose points take their worker down this many times in a row (each a `timeout` or a
// `device_fault`) is stopped: a kernel that hangs, or whose compile outlives the watchdog, would
// otherwise hold the device for the watchdog's budget at every point of its sweep (100,000
// points of 34 s: 39 days), each on a fresh worker.
constexpr int k_lost_points_in_a_row = 3;

std::vector<json> device_events(const std::vector<device_view>& view) {
  std::vector<json> events;
  events.reserve(view.size());
  for (const auto& v : view)
    events.push_back(device_event(v));
  return events;
}

asio::steady_timer::duration seconds(double s) {
  return std::chrono::duration_cast<asio::steady_timer::duration>(std::chrono::duration<double>(s));
}

// Failures that doom every point of the job: stop at once instead of repeating them.
bool fatal_to_job(const std::string& type) {
  return type == "invalid_spec" || type == "compile_error";
}

// Compile errors a job remembers, so that a variant or a set of -D options that does not compile
// at any point stores its log once (100,000 points of a 16 KiB log would be 1.6 GB), and the
// shortest one worth shortening.
constexpr std::size_t k_remembered_compile_logs = 64;
constexpr std::size_t k_compile_log_worth_naming = 512;

// A row's compile error whose log the row of `stored_at` ("point 1 (n=128)") holds already, in
// one line: the log's first line (the compiler's verdict), then where the rest is.
std::string repeated_compile_error(std::string_view message, const std::string& stored_at) {
  constexpr std::size_t k_first_line_bytes = 240;
  std::string_view first = message.substr(0, message.find('\n'));
  if (first.size() > k_first_line_bytes) {
    std::size_t cut = k_first_line_bytes;
    while (cut > 0 && (static_cast<unsigned char>(first[cut]) & 0xC0) == 0x80)
      --cut;  // not inside a UTF-8 sequence
    first = first.substr(0, cut);
  }
  while (!first.empty() && (first.back() == ':' || first.back() == ' ' || first.back() == '\r'))
    first.remove_suffix(1);
  return std::string(first) + ": the same log as at " + stored_at +
         ", stored with that point's row";
}

// Shortens `row`'s compile error where the job stored the same one already (see
// repeated_compile_error), else remembers it; true where it changed the row. The point that
// holds the log is named with its parameters where `plan` shows them to all (not a task's
// held-out point).
bool shorten_repeated_compile_error(
    std::map<std::pair<std::string, std::string>, std::uint64_t>& logs, json& row,
    std::uint64_t point, const job_plan* plan) {
  if (!row.contains("error") || !row["error"].is_object()) return false;
  json& error = row["error"];
  if (error.value("type", "") != "compile_error" || !error.contains("message") ||
      !error["message"].is_string())
    return false;
  const std::string& message = error["message"].get_ref<const std::string&>();
  if (message.size() < k_compile_log_worth_naming) return false;
  std::pair<std::string, std::string> key{row.value("variant", ""), message};
  if (const auto known = logs.find(key); known != logs.end()) {
    if (known->second == point) return false;  // the same point again (a resumed job)
    const auto& sweep = plan ? &plan->spec().sweep : nullptr;
    const bool shown = sweep && (sweep->held_out().empty() || known->second < sweep->public_size());
    error["message"] =
        repeated_compile_error(message, shown ? plan->describe_point(known->second)
                                              : "point " + std::to_string(known->second));
    return true;
  }
  if (logs.size() < k_remembered_compile_logs) logs.emplace(std::move(key), point);
  return false;
}

// The summary of a job's variants from its stored rows (nullopt for a job without variants).
// Reads every row: only jobs with variants pay for it, once, when they end.
std::optional<std::string> variants_summary_text(job_store& store, std::int64_t id,
                                                 const job_plan* plan) {
  if (!plan || plan->variant_count() == 0) return std::nullopt;
  const auto& spec = plan->spec();
  std::vector<std::string> names;
  for (const auto& v : spec.variants)
    names.push_back(v.name);
  std::vector<variant_row> rows;
  for (const auto& stored : store.results(id, 0, UINT64_MAX)) {
    const json r = json::parse(stored.result_json, nullptr, false);
    if (!r.is_object() || !r.contains("variant") || !r["variant"].is_string()) continue;
    variant_row v;
    v.point = r.value("index", std::uint64_t(0));
    v.variant = r["variant"].get<std::string>();
    v.ok = r.value("status", "") == "ok";
    if (r.contains("time_us") && r["time_us"].is_object())
      v.median_us = r["time_us"].value("median", 0.0);
    auto speedup = [&](const char* key) -> std::optional<double> {
      const json::json_pointer p{std::string("/comparison/") + key + "/speedup"};
      if (!r.contains(p) || !r[p].is_number()) return std::nullopt;
      return r[p].get<double>();
    };
    v.over_baseline = speedup("over_baseline");
    v.over_slowest = speedup("over_slowest");
    v.voided = any_voids_score(flags_of(r));
    rows.push_back(std::move(v));
  }
  return variants_json_text(summarize_variants(rows, names, spec.baseline_variant));
}

std::chrono::milliseconds lease_of(const serve_config& config) {
  return std::chrono::milliseconds(std::int64_t(config.lease_timeout_s * 1000));
}

}  // namespace

struct scheduler::active_job {
  job_lease lease;
  std::unique_ptr<job_plan> plan;
  std::string spec_json;
  std::vector<std::uint64_t> todo;  // unmeasured points, ascending
  std::size_t next = 0;             // todo[next] is the next point to send
  // Rows per point: a job's variants are measured together, one row each, stored at row
  // index point * per_point + variant (1 and the point's index for a job without variants).
  std::uint64_t per_point = 1;
  std::uint64_t total = 0;  // rows: points * per_point
  // Points sent to the worker that it dropped unmeasured (a cancel): sent, but never measured.
  std::uint64_t dropped = 0;
  // Rows measured (stored, or held to be stored), counting the points at the worker as not.
  std::uint64_t measured_rows(std::size_t at_worker) const {
    return total - (todo.size() - next + at_worker + dropped) * per_point;
  }
  std::optional<point_error> first_failure;
  std::uint64_t first_failure_index = 0;
  // Points that timed out, crashed their worker or had their compile stopped at its limit since
  // one was answered.
  int lost_in_a_row = 0;
  // The first point whose kernel did not compile, where every point compiles it alike
  // (job_plan::compiles_alike): the job stops there, with its error.
  std::optional<std::pair<std::uint64_t, point_error>> uncompilable;
  // Compile errors stored with their whole log, by variant and message, and the point whose row
  // holds each: a later row failing with the same one stores a line naming that point instead.
  std::map<std::pair<std::string, std::string>, std::uint64_t> compile_logs;
  bool cancel = false;
  bool lost = false;  // another node owns it now: stop, and store nothing of its end
  // Its end, while the store does not take it.
  std::optional<std::pair<job_status, std::optional<point_error>>> ending;
};

struct scheduler::device_slot {
  device_slot(asio::io_context& io, const clock& time, int i)
      : index(i), window(time), watchdog(io), retry(io), cancel_grace(io) {}
  int index;
  int ordinal = 0;  // the device's number in its runtime (hip, opencl), or the mock's index
  device_info info;
  device_state state = device_state::starting;
  std::unique_ptr<worker_supervisor> worker;
  bool worker_ready = false;
  std::unique_ptr<active_job> job;
  bool job_loaded = false;
  point_window window;
  bool timed_out = false;
  asio::steady_timer watchdog;
  asio::steady_timer retry;  // a job's end the store did not take yet
  // A cancelled job's point still running when this fires is stopped: the worker is killed.
  asio::steady_timer cancel_grace;
  bool cancel_killed = false;  // the worker was killed for that, not lost
  std::uint64_t points = 0;
  bool roofline_wanted = false;   // measure the roofline before the next job
  bool roofline_running = false;  // the worker is measuring it
  // The last measurement failed or took its worker down: not measured again until asked, so
  // that a device whose measurement faults it still runs jobs (without measured ceilings).
  bool roofline_failed = false;
};

const clock& scheduler::default_clock() {
  static const system_clock c;
  return c;
}

scheduler::scheduler(asio::io_context& io, job_store& store, job_waiters& waiters,
                     event_hub& events, const serve_config& config,
                     const std::vector<device_info>& gpus, const clock& time)
    : m_io(io),
      m_store(store),
      m_waiters(waiters),
      m_config(config),
      m_clock(time),
      m_events(store, events),
      m_dispatcher(store, time, config.node, lease_of(config)),
      m_commit([&store, &time](
                   std::span<const result_row> rows) { store.add_results(rows, time.unix_ms()); },
               time),
      m_cache(store, time),
      m_rooflines(store, config.database.empty() ? std::string() : config.node),
      m_heartbeat(store, time, config.node, lease_of(config)) {
  for (const auto& gpu : gpus) {
    auto slot = std::make_unique<device_slot>(io, time, int(m_slots.size()));
    slot->ordinal = gpu.index;
    slot->info = gpu;
    slot->info.index = slot->index;
    m_slots.push_back(std::move(slot));
  }
  const bool mocks = serves_mock_devices(config, gpus.size());
  const device_model* model = find_device_model(config.mock_model);
  for (int i = 0; mocks && i < config.mock_devices; ++i) {
    auto slot = std::make_unique<device_slot>(io, time, int(m_slots.size()));
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
  for (auto& s : m_slots) {
    device_slot& slot = *s;
    slot.worker = std::make_unique<worker_supervisor>(
        io, worker_argv(slot), config.worker_start_timeout_s,
        worker_supervisor::handlers{
            [this, &slot](std::string_view line) { on_worker_line(slot, line); },
            [this, &slot](const std::string& how) { on_worker_exit(slot, how); },
            [this, &slot] {
              if (!slot.worker_ready) {
                slot.state = slot.worker->failed()       ? device_state::failed
                             : slot.worker->restarting() ? device_state::restarting
                                                         : device_state::starting;
              }
              publish();
            }});
  }
}

scheduler::~scheduler() {
  for (auto& slot : m_slots) {
    slot->watchdog.cancel();
    slot->retry.cancel();
    slot->worker.reset();
  }
}

void scheduler::start() {
  m_renewed_at = m_clock.now();
  try {
    for (const auto id : m_store.recover_node(m_config.node, m_clock.unix_ms())) {
      spdlog::info("job {} was running when this node stopped; it resumes", id);
      m_events.job_changed(id);
      m_waiters.notify(id);
    }
  } catch (const storage_error& e) {
    // Their leases run out instead, and they resume then.
    spdlog::error("cannot requeue the jobs this node left running: {}", e.what());
  }
  for (auto& slot : m_slots)
    slot->worker->start();
  publish();
  arm_heartbeat();
}

std::vector<std::string> scheduler::worker_argv(const device_slot& slot) const {
  std::vector<std::string> argv{m_config.worker_executable,
                                "worker",
                                "--device",
                                std::to_string(slot.ordinal),
                                "--engine",
                                std::string(to_string(slot.info.engine)),
                                "--mock-model",
                                m_config.mock_model,
                                "--log-level",
                                m_config.log_level,
                                "--log-format",
                                m_config.log_format,
                                "--point-timeout",
                                std::to_string(m_config.point_timeout_s),
                                "--compile-timeout",
                                std::to_string(m_config.compile_timeout_s),
                                "--compile-memory",
                                std::to_string(m_config.compile_memory_bytes),
                                "--phase-fd",
                                std::to_string(worker_process::k_phase_fd)};
  if (m_config.allow_fault_injection) argv.push_back("--allow-fault-injection");
  return argv;
}

void scheduler::on_worker_line(device_slot& slot, std::string_view line) {
  worker_protocol::worker_message msg;
  try {
    msg = worker_protocol::parse_worker_line(line);
  } catch (const worker_protocol::protocol_error& e) {
    slot.worker->set_last_error(e.what());
    spdlog::error("device {}: {}; replacing the worker", slot.index, e.what());
    slot.worker->kill();
    return;
  }
  using kind = worker_protocol::worker_message::kind;
  if (msg.type == kind::ready) {
    slot.worker->ready();
    slot.worker_ready = true;
    slot.info = msg.device;
    slot.info.index = slot.index;
    spdlog::info("device {}: worker {} ready: {}", slot.index, slot.worker->pid(), slot.info.name);
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
  if (slot.window.empty() || msg.seq != slot.window.head().seq || !slot.job) {
    slot.worker->set_last_error("the worker answered out of order");
    spdlog::error("device {}: reply to request {} out of order; replacing the worker", slot.index,
                  msg.seq);
    slot.worker->kill();
    return;
  }
  const std::uint64_t index = slot.window.head().index;
  if (msg.type == kind::dropped) {
    // Not measured, as asked (cancel or shutdown): nothing to store; a requeued job measures
    // it when it resumes.
    slot.window.dropped();
    if (slot.job) ++slot.job->dropped;
    if (slot.window.empty()) slot.watchdog.cancel();
    advance(slot);
    return;
  }
  if (msg.type == kind::failure) {
    if (msg.exiting) {
      // Its end follows (a compile stopped at its limit): nothing more goes to it, and the
      // device takes its next job on the worker that replaces it.
      slot.worker_ready = false;
      slot.state = device_state::restarting;
    }
    // A compile stopped at its limit dooms the job only where every point compiles the kernel
    // alike; where a sweep parameter reaches the compiler (-DUNROLL=U) other points may compile
    // in a moment, so only this one fails, and three in a row stop the job as crashes do.
    const bool one_point = msg.exiting && msg.error_type == "compile_error" && slot.job->plan &&
                           !slot.job->plan->compiles_alike();
    if (fatal_to_job(msg.error_type) && !one_point) {
      flush_results();
      slot.window.clear();
      slot.watchdog.cancel();
      finish_job(slot, job_status::failed, point_error{msg.error_type, msg.error_message});
      return;
    }
    slot.window.answered(std::nullopt);
    if (msg.exiting) {
      // The points sent after it go to the worker that replaces it, as never sent.
      slot.job->next -= slot.window.size();
      slot.window.clear();
      slot.watchdog.cancel();
    }
    if (one_point) ++slot.job->lost_in_a_row;
    record_failure(slot, index, msg.error_type, msg.error_message);
    return;
  }
  slot.job->lost_in_a_row = 0;
  const std::uint64_t per_point = slot.job->per_point;
  const bool many = msg.result.is_array();
  const std::size_t count = many ? msg.result.size() : 1;
  bool right = count == per_point;
  for (std::size_t v = 0; v < count && right; ++v) {
    const json& r = many ? msg.result[v] : msg.result;
    right = r.value("index", std::uint64_t(-1)) == index;
  }
  if (!right) {
    slot.window.answered(std::nullopt);
    record_failure(slot, index, "internal", "the worker answered for another point");
    return;
  }
  std::vector<result_row> rows;
  rows.reserve(count);
  // A held-out point whose score is private is never the job's best (result_row::rankable).
  const job_spec* spec = slot.job->plan ? &slot.job->plan->spec() : nullptr;
  const bool rankable = !spec || !spec->private_held_out_scores || spec->sweep.held_out().empty() ||
                        index < spec->sweep.public_size();
  for (std::size_t v = 0; v < count; ++v) {
    json& r = many ? msg.result[v] : msg.result;
    const bool ok = r.value("status", "") == "ok";
    std::optional<double> median;
    if (ok && r.contains("time_us") && r["time_us"].is_object()) {
      median = r["time_us"].value("median", 0.0);
    }
    if (!ok && !slot.job->first_failure && r.contains("error") && r["error"].is_object()) {
      std::string message = r["error"].value("message", "");
      if (r.contains("variant")) message = "variant " + r.value("variant", "") + ": " + message;
      slot.job->first_failure = point_error{r["error"].value("type", "?"), std::move(message)};
      slot.job->first_failure_index = index;
    }
    if (!ok && !many && r.contains("error") && r["error"].is_object() &&
        r["error"].value("type", "") == "compile_error" && slot.job->plan &&
        !slot.job->uncompilable && slot.job->plan->compiles_alike()) {
      slot.job->uncompilable.emplace(index,
                                     point_error{"compile_error", r["error"].value("message", "")});
    }
    const bool shortened = !ok && shorten_repeated_compile_error(slot.job->compile_logs, r, index,
                                                                 slot.job->plan.get());
    result_row row;
    row.index = index * per_point + v;
    if (r.contains("variant") && r["variant"].is_string()) {
      row.variant = r["variant"];
      row.point = index;
    }
    row.ok = ok;
    row.median_us = median;
    row.cost = cost_of(r);
    row.params_json = r.contains("params") ? r["params"].dump() : "{}";
    row.result_json = many || shortened ? r.dump() : std::move(msg.result_text);
    row.score = score_of(r);
    row.flags = flags_of(r);
    row.rankable = rankable;
    rows.push_back(std::move(row));
  }
  slot.window.answered(msg.wall_ms);
  point_done(slot, std::move(rows));
}

void scheduler::on_worker_exit(device_slot& slot, const std::string& how) {
  slot.worker_ready = false;
  slot.job_loaded = false;  // the next worker is told the job again
  const bool measuring = std::exchange(slot.roofline_running, false);
  if (measuring) {
    // Not tried again by itself (a measurement that kills its worker would loop), only when
    // asked again while it ran.
    slot.roofline_failed = true;
    slot.worker->set_last_error("the worker " + how + " while measuring the roofline");
    spdlog::error("device {}: {}", slot.index, slot.worker->last_error());
  }
  slot.watchdog.cancel();
  slot.cancel_grace.cancel();
  const bool timed_out = slot.timed_out;
  slot.timed_out = false;
  // What the worker was doing with the user's code as it ended, where it was doing anything.
  const std::string& during = slot.worker->exit_phase();
  const std::string how_when = during.empty() ? how : how + " during " + during;
  const bool for_cancel = std::exchange(slot.cancel_killed, false) && slot.job && slot.job->cancel;
  if (for_cancel) {
    // Stopped for a cancel: the points at the worker are dropped unmeasured, as a worker drops
    // those queued behind its current one, and the job ends now.
    spdlog::info("device {}: job {} cancelled; its point still running was stopped", slot.index,
                 slot.job->lease.job_id);
    slot.job->dropped += slot.window.size();
  } else if (!slot.window.empty() && slot.job) {
    const std::int64_t id = slot.job->lease.job_id;
    const auto death = slot.window.worker_died(timed_out);
    using verdict = point_window::verdict;
    switch (death.what) {
      case verdict::remeasure:
        // Its replies come in batches, so the points it had may be done but unreported.
        spdlog::warn(
            "device {}: worker {} with {} points of job {} queued; re-measuring them one at a "
            "time",
            slot.index, how, death.unsent, id);
        break;
      case verdict::timed_out:
        spdlog::error("device {}: job {} point {} timed out; worker replaced", slot.index, id,
                      death.index);
        ++slot.job->lost_in_a_row;
        record_failure(slot, death.index, "timeout",
                       "the point did not finish within its watchdog deadline" +
                           (during.empty() ? std::string() : ", stopped during " + during) +
                           "; the worker was killed and replaced");
        break;
      case verdict::retry:
        spdlog::warn("device {}: worker {} while measuring job {} point {}; retrying it",
                     slot.index, how_when, id, death.index);
        break;
      case verdict::device_fault:
        if (!m_draining) {
          spdlog::error("device {}: worker {} while measuring job {} point {}", slot.index,
                        how_when, id, death.index);
          ++slot.job->lost_in_a_row;
          std::string message = "the worker " + how + " while measuring this point";
          if (!during.empty()) message += ", during " + during;
          message += " (tried " + std::to_string(death.attempts) + " times)";
          if (!during.empty() && slot.info.type == "cpu") {
            message +=
                ". On a CPU device a kernel runs in the worker's own process: one that reads or "
                "writes outside its buffers, recurses too deeply, or declares more private, "
                "__local or __constant data than the device can place ends it";
          }
          record_failure(slot, death.index, "device_fault", message);
        }
        break;
      case verdict::none:
        break;
    }
    // Requests the worker never answered go out again to its successor.
    if (slot.job) slot.job->next -= death.unsent;
  } else if (!m_draining && !measuring) {
    slot.worker->set_last_error("worker " + how);
    spdlog::warn("device {}: worker {}", slot.index, how);
  }
  slot.window.clear();
  if (m_draining) {
    slot.worker->stop();
    check_drained();
    return;
  }
  slot.state = device_state::restarting;
  publish();
  if (for_cancel) advance(slot);  // ends the job as cancelled, without waiting for a worker
}

scheduler::device_slot* scheduler::slot_running(std::int64_t job_id) {
  for (auto& slot : m_slots) {
    if (slot->job && slot->job->lease.job_id == job_id) return slot.get();
  }
  return nullptr;
}

void scheduler::enqueue(std::int64_t) {
  asio::post(m_io, [this] { dispatch(); });
}

void scheduler::cancel(std::int64_t id) {
  asio::post(m_io, [this, id] {
    if (auto* slot = slot_running(id)) stop_job(*slot);
  });
}

void scheduler::job_changed_elsewhere(const job_record& job) {
  asio::post(m_io, [this, id = job.id, status = job.status, cancel = job.cancel_requested,
                    node = job.node] {
    if (status == job_status::queued) {
      dispatch();
    } else if (status == job_status::running && cancel && node == m_config.node) {
      if (auto* slot = slot_running(id)) stop_job(*slot);
    }
  });
}

// Stops the slot's job after the points already at the worker (cancel, or a lost lease).
void scheduler::stop_job(device_slot& slot) {
  auto& job = *slot.job;
  if (job.ending) return;
  job.cancel = true;
  // Between points (waiting for a worker), stop now; otherwise after the current point: the
  // worker drops the requests queued behind it.
  if (slot.window.empty()) {
    advance(slot);
    return;
  }
  if (slot.window.size() > 1 && slot.worker_ready) {
    slot.worker->send(worker_protocol::drop_line(job.lease.job_id));
  }
  // A point that does not end soon (a long one, or one that hangs until its watchdog, 30 s or
  // more) is not waited for: its worker is killed and replaced, and the job ends cancelled.
  slot.cancel_grace.expires_after(k_cancel_grace);
  slot.cancel_grace.async_wait([this, &slot](const asio::error_code& ec) {
    if (ec || m_draining || !slot.job || !slot.job->cancel || slot.job->ending ||
        slot.window.empty() || !slot.worker->running()) {
      return;
    }
    spdlog::info("device {}: job {} cancelled {} s ago and its point still runs; stopping it",
                 slot.index, slot.job->lease.job_id,
                 std::chrono::duration_cast<std::chrono::seconds>(k_cancel_grace).count());
    slot.cancel_killed = true;
    slot.worker->kill();
  });
}

void scheduler::dispatch() {
  if (m_draining) return;
  for (auto& slot : m_slots) {
    if (slot->job || !slot->worker_ready || slot->roofline_running) continue;
    if (slot->roofline_wanted) {
      // Between jobs, so that no measurement shares the device with it. A request that comes
      // while it runs wants another, since this one may have begun before what it asks about.
      slot->roofline_wanted = false;
      slot->roofline_running = true;
      slot->state = device_state::measuring;
      spdlog::info("device {}: measuring its roofline", slot->index);
      slot->worker->send(worker_protocol::measure_roofline_line());
      continue;
    }
    // A job that cannot start (its spec does not load) or ends at once (the result cache)
    // leaves the device free for the next.
    while (!slot->job) {
      auto claimed = m_dispatcher.next_for(slot->info);
      if (!claimed || !start_job(*slot, std::move(*claimed))) break;
    }
  }
  publish();
}

bool scheduler::start_job(device_slot& slot, claimed_job&& claimed) {
  const std::int64_t id = claimed.lease.job_id;
  // Points of this job that this node still holds (measured while the database was away, before
  // its lease ran out and the job came back here) are stored first: the job then resumes after
  // them rather than measuring them again, and the batch that stores them holds no copies.
  if (m_commit.holds(id)) store_held_points();
  auto active = std::make_unique<active_job>();
  active->lease = claimed.lease;
  active->spec_json = std::move(claimed.spec_json);
  active->cancel = claimed.cancel_requested;
  slot.job = std::move(active);
  slot.job_loaded = false;
  slot.window.start_job();
  slot.state = device_state::busy;
  publish();  // the device busy with it, before the event that says the job runs
  m_events.job_changed(id);
  auto& job = *slot.job;
  try {
    job.plan = std::make_unique<job_plan>(
        compile_plan(parse_job_spec(parse_json(job.spec_json), spec_limits::stored()),
                     spec_limits::stored().plan));
  } catch (const std::exception& e) {
    spdlog::error("job {}: stored spec does not load: {}", id, e.what());
    finish_job(slot, job_status::failed,
               point_error{"internal", std::string("stored spec does not load: ") + e.what()});
    return true;
  }
  job.per_point = job.plan->kernels_per_point();
  job.total = job.plan->size() * job.per_point;
  std::vector<std::uint64_t> done;
  try {
    done = m_store.result_indices(id);
  } catch (const storage_error& e) {
    // Put it back for later (or, if even that fails, let its lease run out).
    spdlog::error("job {}: cannot read what it measured so far: {}; it waits", id, e.what());
    try {
      m_store.requeue(m_config.node, job.lease);
    } catch (const storage_error&) {
    }
    slot.job.reset();
    slot.state = device_state::idle;
    return false;
  }
  if (const auto from = m_cache.answer(id, job.plan->spec(), slot.info, done.empty())) {
    spdlog::info("job {}: {} points answered from the cache (job {})", id, job.total, *from);
    finish_job(slot, job_status::succeeded, std::nullopt);
    return true;
  }
  // A point is done once every one of its rows is stored (its variants' rows are stored
  // together, but a crash may fall between two transactions of a group commit).
  std::size_t d = 0;
  for (std::uint64_t p = 0; p < job.plan->size(); ++p) {
    std::uint64_t stored = 0;
    while (d < done.size() && done[d] / job.per_point == p) {
      ++stored;
      ++d;
    }
    if (stored < job.per_point) job.todo.push_back(p);
  }
  spdlog::info("job {} starts on device {}: {} of {} points to measure", id, slot.index,
               job.todo.size(), job.total);
  advance(slot);
  return true;
}

std::optional<std::string> scheduler::skip_the_rest(device_slot& slot) {
  if (!slot.window.empty()) return std::nullopt;  // the points at the worker first
  if (!flush_results()) return std::nullopt;      // the flush retry calls advance() again
  auto& job = *slot.job;
  const std::uint64_t skipped = job.todo.size() - job.next;
  job.next = job.todo.size();
  return std::to_string(skipped) + " of " + std::to_string(job.total / job.per_point) +
         " points were not measured";
}

void scheduler::advance(device_slot& slot) {
  auto& job = *slot.job;
  if (m_draining) {
    check_drained();
    return;
  }
  if (job.ending) return;  // waiting for the store to take its end
  if (job.lost) {
    if (slot.window.empty()) abandon_job(slot);
    return;
  }
  if (job.cancel) {
    if (!slot.window.empty()) return;  // stop after the points already at the worker
    if (!flush_results()) return;      // the flush retry calls back here
    const std::uint64_t measured = job.measured_rows(0);
    finish_job(slot, job_status::cancelled,
               point_error{"cancelled", "cancelled after " + std::to_string(measured) + " of " +
                                            std::to_string(job.total) + " points"});
    return;
  }
  if (job.uncompilable && job.next < job.todo.size()) {
    const auto not_measured = skip_the_rest(slot);  // each point at the worker fails at once
    if (!not_measured) return;
    const std::string msg =
        "the kernel did not compile at point " + std::to_string(job.uncompilable->first) +
        ", nor would it at any other (no compile option takes a sweep parameter): " +
        *not_measured + "; " + job.uncompilable->second.message;
    spdlog::warn("job {}: stopped: its kernel does not compile ({})", job.lease.job_id,
                 *not_measured);
    finish_job(slot, job_status::failed, point_error{"compile_error", msg});
    return;
  }
  if (job.lost_in_a_row >= k_lost_points_in_a_row && job.next < job.todo.size()) {
    const auto not_measured = skip_the_rest(slot);
    if (!not_measured) return;
    std::string msg = "stopped after " + std::to_string(k_lost_points_in_a_row) +
                      " points in a row timed out, crashed their worker or had their compile "
                      "stopped at its limit; " +
                      *not_measured;
    if (job.first_failure) {
      msg += "; the first failure, point " + std::to_string(job.first_failure_index) + ": " +
             job.first_failure->type + ": " + job.first_failure->message;
    }
    spdlog::warn("job {}: {}", job.lease.job_id, msg);
    finish_job(slot, job_status::failed, point_error{"points_failed", msg});
    return;
  }
  if (job.next >= job.todo.size()) {
    if (!slot.window.empty()) return;
    // A job is finished only once all its points are in the store.
    if (!flush_results()) return;
    std::optional<job_record> rec;
    try {
      rec = m_store.get(job.lease.job_id);
    } catch (const storage_error& e) {
      spdlog::warn("job {}: cannot read its progress: {}; trying again", job.lease.job_id,
                   e.what());
      job.ending = std::pair{job_status::succeeded, std::nullopt};  // decided when it reads
      slot.retry.expires_after(1s);
      slot.retry.async_wait([this, &slot](const asio::error_code& ec) {
        if (ec || !slot.job) return;
        slot.job->ending.reset();
        advance(slot);
      });
      return;
    }
    const std::uint64_t failed = rec ? rec->progress.failed : 0;
    if (failed == 0) {
      finish_job(slot, job_status::succeeded, std::nullopt);
    } else {
      // "2 of 12 points failed; the first, point 3: ...", "all 12 points failed; ...", "its
      // only point failed; point 0: ...". A point is always named by its number: a task's
      // scrubber hides a held-out one by it.
      const std::string n = std::to_string(job.total);
      std::string msg = job.total == 1 ? "its only point failed"
                        : failed == job.total
                            ? "all " + n + " points failed"
                            : std::to_string(failed) + " of " + n + " points failed";
      if (job.first_failure) {
        msg += std::string(job.total == 1 ? "; point " : "; the first, point ") +
               std::to_string(job.first_failure_index) + ": " + job.first_failure->type + ": " +
               job.first_failure->message;
      }
      finish_job(slot, job_status::failed, point_error{"points_failed", msg});
    }
    return;
  }
  if (!slot.worker_ready) return;  // resumes when the worker reports ready
  if (m_commit.full()) return;     // storage is failing: wait for it
  if (!leases_fresh()) return;     // the lease may be lost: wait for the next heartbeat
  if (!slot.job_loaded) {
    slot.worker->send(worker_protocol::job_line(job.lease.job_id, job.spec_json));
    slot.job_loaded = true;
  }
  std::size_t room = slot.window.room();
  if (room == 0) return;
  std::string lines;
  const bool was_empty = slot.window.empty();
  while (room-- > 0 && job.next < job.todo.size()) {
    const point_window::point p{job.todo[job.next++], m_next_seq++};
    slot.window.sent(p);
    lines += worker_protocol::measure_line(p.seq, job.lease.job_id, p.index);
  }
  if (was_empty && !slot.window.empty()) arm_watchdog(slot);
  if (!lines.empty()) slot.worker->send(std::move(lines));
}

void scheduler::arm_watchdog(device_slot& slot) {
  const auto& spec = slot.job->plan->spec();
  const double budget_s = point_budget_s(spec, m_config.point_timeout_s);
  slot.watchdog.expires_after(slot.window.deadline(budget_s) - m_clock.now());
  slot.watchdog.async_wait([this, &slot](const asio::error_code& ec) {
    if (ec || slot.window.empty() || !slot.worker->running()) return;
    slot.timed_out = true;
    slot.worker->kill();
  });
}

void scheduler::record_failure(device_slot& slot, std::uint64_t index, const std::string& type,
                               const std::string& message) {
  auto& job = *slot.job;
  auto params = job.plan->params(index);
  const std::string params_text = params_json(params).dump();
  if (!job.first_failure) {
    job.first_failure = point_error{type, message};
    job.first_failure_index = index;
  }
  // Every variant of the point fails with it: they were measured together.
  const auto& variants = job.plan->spec().variants;
  std::vector<result_row> rows;
  for (std::uint64_t v = 0; v < job.per_point; ++v) {
    auto result = failed_point(index, params, type, message);
    if (!variants.empty()) result.variant = variants[v].name;
    result.l2 = job.plan->spec().timing.l2;
    result.environment.device = slot.info.name;
    result.environment.driver = slot.info.driver;
    const json j = to_json(result);
    result_row row;
    row.index = index * job.per_point + v;
    row.variant = result.variant;
    if (row.variant) row.point = index;
    row.params_json = params_text;
    row.result_json = j.dump();
    row.score = score_of(j);
    row.flags = flags_of(j);
    rows.push_back(std::move(row));
  }
  point_done(slot, std::move(rows));
}

void scheduler::point_done(device_slot& slot, std::vector<result_row> rows) {
  bool full = false;
  const std::size_t count = rows.size();
  for (auto& row : rows) {
    row.job_id = slot.job->lease.job_id;
    full = m_commit.add(std::move(row)) || full;
  }
  if (full) {
    flush_results();
  } else {
    arm_flush();
  }
  if (!slot.window.empty()) {
    arm_watchdog(slot);
  } else {
    slot.watchdog.cancel();
  }
  slot.points += count;
  m_points_measured += count;
  advance(slot);
  publish();
}

void scheduler::arm_flush() {
  const auto due = m_commit.due();
  if (!due || m_flush_armed) return;
  m_flush_armed = true;
  m_flush_timer.expires_after(*due - m_clock.now());
  m_flush_timer.async_wait([this](const asio::error_code& ec) {
    m_flush_armed = false;
    if (!ec) store_held_points();
  });
}

void scheduler::store_held_points() {
  const bool was_failing = m_commit.failing();
  if (!flush_results() || !was_failing) return;
  // Storage is back: the jobs that waited for it go on (posted: this may run in dispatch()).
  asio::post(m_io, [this] {
    for (auto& slot : m_slots) {
      if (slot->job && slot->window.empty()) advance(*slot);
    }
  });
}

bool scheduler::flush_results() {
  auto stored = m_commit.flush();
  m_points_unstored = m_commit.failing() ? m_commit.held() : 0;
  if (!stored) {
    arm_flush();
    return false;
  }
  if (!stored->empty()) {
    m_events.points_stored(*stored, [this](std::int64_t id) {
      // Everything measured is stored now, so what the job has done is what it has sent, less
      // what its worker still holds.
      for (const auto& slot : m_slots) {
        if (!slot->job || slot->job->lease.job_id != id) continue;
        const auto& job = *slot->job;
        return std::pair<std::uint64_t, std::uint64_t>{job.measured_rows(slot->window.size()),
                                                       job.total};
      }
      return std::pair<std::uint64_t, std::uint64_t>{0, 0};
    });
  }
  return true;
}

void scheduler::finish_job(device_slot& slot, job_status status, std::optional<point_error> error) {
  slot.job->ending = std::pair{status, std::move(error)};
  try_finish(slot);
}

void scheduler::try_finish(device_slot& slot) {
  auto& job = *slot.job;
  const std::int64_t id = job.lease.job_id;
  const auto& [status, error] = *job.ending;
  bool ended = false;
  try {
    std::optional<std::uint64_t> public_points;
    if (job.plan && !job.plan->spec().sweep.held_out().empty()) {
      public_points = job.plan->spec().sweep.public_size();
    }
    const std::string fitness =
        job_fitness_text(m_store.scored_points(id), job.total, status == job_status::succeeded,
                         {!m_config.score_excessive_speedups, false}, public_points);
    ended = m_store.finish(m_config.node, job.lease, status, error, m_clock.unix_ms(), fitness,
                           variants_summary_text(m_store, id, job.plan.get()));
  } catch (const storage_error& e) {
    spdlog::error("job {}: cannot store its end ({}): {}; retrying every second", id,
                  to_string(status), e.what());
    slot.retry.expires_after(1s);
    slot.retry.async_wait([this, &slot](const asio::error_code& ec) {
      if (!ec && slot.job && slot.job->ending) try_finish(slot);
    });
    return;
  }
  if (ended) {
    spdlog::info("job {} {}{}", id, to_string(status), error ? ": " + error->message : "");
  } else {
    spdlog::warn("job {}: its lease was lost before it ended here; its end is the new owner's", id);
  }
  slot.job.reset();
  slot.window.clear();
  slot.watchdog.cancel();
  slot.state = slot.worker_ready ? device_state::idle : slot.state;
  publish();  // before waking waiters: whoever sees the job end sees the device free
  m_events.job_changed(id);
  m_waiters.notify(id);
  // Posted, not called: finish_job runs inside dispatch() (via start_job) and the device must
  // not take its next job in the middle of that loop.
  asio::post(m_io, [this] { dispatch(); });
}

void scheduler::abandon_job(device_slot& slot) {
  const std::int64_t id = slot.job->lease.job_id;
  spdlog::warn("job {}: this node's lease on it ran out and another node took it; stopped here",
               id);
  slot.job.reset();
  slot.window.clear();
  slot.watchdog.cancel();
  slot.state = slot.worker_ready ? device_state::idle : slot.state;
  publish();
  asio::post(m_io, [this] { dispatch(); });
}

void scheduler::arm_heartbeat() {
  if (m_draining) return;
  m_heartbeat_timer.expires_after(m_heartbeat.due() - m_clock.now());
  m_heartbeat_timer.async_wait([this](const asio::error_code& ec) {
    if (ec || m_draining) return;
    beat();
    arm_heartbeat();
  });
}

std::vector<device_record> scheduler::device_records(const std::vector<device_view>& view) const {
  std::vector<device_record> out;
  for (const auto& v : view) {
    device_record d;
    d.node = m_config.node;
    d.index = v.info.index;
    d.engine = std::string(to_string(v.info.engine));
    d.model = v.info.model;
    d.state = std::string(to_string(v.state));
    d.current_job = v.current_job;
    d.info_json = to_json(v).dump();
    out.push_back(std::move(d));
  }
  return out;
}

void scheduler::beat() {
  const auto view = this->devices();
  std::vector<job_lease> held;
  for (const auto& slot : m_slots) {
    if (slot->job && !slot->job->lost) held.push_back(slot->job->lease);
  }
  const auto started = m_clock.now();
  const auto out = m_heartbeat.beat(device_records(view), held);
  if (!out.stored) return;
  m_shared = device_events(view);
  const bool was_fresh = leases_fresh();
  m_renewed_at = started;
  for (const auto id : out.renewal.lost) {
    if (auto* slot = slot_running(id)) {
      slot->job->lost = true;
      stop_job(*slot);
    }
  }
  for (const auto id : out.renewal.cancel_requested) {
    if (auto* slot = slot_running(id)) stop_job(*slot);
  }
  for (const auto id : out.expired) {
    spdlog::warn("job {}: its node stopped renewing its lease; it is queued again", id);
    m_events.job_changed(id);
  }
  if (!was_fresh) {
    spdlog::info("leases renewed; the jobs that waited for it go on");
    for (auto& slot : m_slots) {
      if (slot->job && slot->window.empty()) advance(*slot);
    }
  }
  watch_other_nodes();
  // Jobs other nodes queued without this node hearing of it, and expired ones: claim them.
  dispatch();
}

void scheduler::watch_other_nodes() {
  if (m_config.database.empty()) return;
  try {
    const std::int64_t now = m_clock.unix_ms();
    for (const auto& event :
         m_offline_watch.look(m_store.devices(now), m_config.node, now, m_config.lease_timeout_s)) {
      m_events.device_offline_elsewhere(event);
    }
  } catch (const storage_error& e) {
    spdlog::debug("devices: the other nodes' are not read ({}); at the next heartbeat", e.what());
  }
}

bool scheduler::leases_fresh() const {
  // Only where other nodes may take this node's jobs: measured from before the renewal was
  // sent, so this node stops before the store can let its lease run out.
  return m_config.database.empty() || m_clock.now() - m_renewed_at < lease_of(m_config) / 2;
}

void scheduler::load_roofline(device_slot& slot) {
  slot.roofline_running = false;
  if (auto stored = m_rooflines.load(slot.info)) {
    slot.info.measured = *stored;
    slot.worker->send(worker_protocol::set_roofline_line(*slot.info.measured));
    return;
  }
  if (!slot.roofline_failed) slot.roofline_wanted = true;
}

void scheduler::roofline_measured(device_slot& slot, const worker_protocol::worker_message& msg) {
  if (!slot.roofline_running) return;  // not asked for: ignore
  slot.roofline_running = false;
  slot.state = device_state::idle;
  slot.roofline_failed = !msg.error_message.empty();
  if (slot.roofline_failed) {
    slot.worker->set_last_error("roofline measurement failed: " + msg.error_message);
    spdlog::error("device {}: {}", slot.index, slot.worker->last_error());
  } else {
    // Each measurement of a device has a time of its own, so that a client waiting for a new
    // one can tell it by its time: one that ends in the millisecond of the last (a mock
    // device's take well under one) reads a millisecond later.
    const std::int64_t last = slot.info.measured ? slot.info.measured->measured_ms : 0;
    slot.info.measured = msg.roofline;
    slot.info.measured->measured_ms = std::max(msg.roofline.measured_ms, last + 1);
    spdlog::info("device {}: roofline measured: {:.0f} GB/s, {:.1f} TFLOP/s f16", slot.index,
                 msg.roofline.peaks.bandwidth_gbps, msg.roofline.peaks.f16_tflops);
    m_rooflines.save(slot.info, *slot.info.measured);
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
    m_heartbeat_timer.cancel();
    m_drain_timer = std::make_unique<asio::steady_timer>(m_io);
    m_drain_timer->expires_after(seconds(m_config.drain_timeout_s));
    m_drain_timer->async_wait([this](const asio::error_code& ec) {
      if (ec) return;
      for (auto& slot : m_slots) {
        if (!slot->window.empty() && slot->job) {
          spdlog::warn(
              "job {} point {} did not finish within the drain timeout; it will be measured "
              "again when the job resumes",
              slot->job->lease.job_id, slot->window.head().index);
          slot->window.clear();
        }
      }
      check_drained();
    });
    for (auto& slot : m_slots) {
      slot->retry.cancel();
      // Finish the point being measured, not the ones queued behind it.
      if (slot->job && slot->window.size() > 1 && slot->worker_ready) {
        slot->worker->send(worker_protocol::drop_line(slot->job->lease.job_id));
      }
    }
    check_drained();
  });
}

void scheduler::check_drained() {
  if (!m_draining || !m_on_drained) return;
  for (const auto& slot : m_slots) {
    if (!slot->window.empty()) return;
  }
  if (!flush_results()) {
    spdlog::error("shutting down with {} measured point(s) not stored; they will be measured again",
                  m_commit.held());
  }
  m_flush_timer.cancel();
  for (auto& slot : m_slots) {
    if (slot->job) {
      const auto id = slot->job->lease.job_id;
      try {
        if (!slot->job->lost && m_store.requeue(m_config.node, slot->job->lease)) {
          spdlog::info("job {} interrupted by shutdown; it resumes on the next node to claim it",
                       id);
          m_events.job_changed(id);
        }
      } catch (const storage_error& e) {
        spdlog::error(
            "job {}: cannot put it back in the queue ({}); it resumes when its lease "
            "runs out",
            id, e.what());
      }
      slot->job.reset();
    }
    slot->watchdog.cancel();
    slot->retry.cancel();
    slot->worker->close_input();
  }
  try {
    m_store.leave(m_config.node, m_clock.unix_ms());
  } catch (const storage_error& e) {
    spdlog::warn("cannot record that this node stopped: {}", e.what());
  }
  if (m_drain_timer) m_drain_timer->cancel();
  auto done = std::move(m_on_drained);
  m_on_drained = nullptr;
  // Give workers a moment to exit on their own before their owners kill them.
  auto timer = std::make_shared<asio::steady_timer>(m_io, 200ms);
  timer->async_wait([this, timer, done = std::move(done)](const asio::error_code&) {
    for (auto& slot : m_slots)
      slot->worker->stop();
    publish();
    done();
  });
}

void scheduler::publish() {
  std::vector<device_view> view;
  view.reserve(m_slots.size());
  std::uint64_t restarts = 0;
  for (const auto& slot : m_slots) {
    device_view v;
    v.node = m_config.node;
    v.info = slot->info;
    v.state = slot->state;
    if (slot->job) v.current_job = slot->job->lease.job_id;
    v.worker_pid = slot->worker ? slot->worker->pid() : 0;
    v.worker_restarts = slot->worker ? slot->worker->restarts() : 0;
    v.points_measured = slot->points;
    v.last_error = slot->worker ? slot->worker->last_error() : "";
    restarts += v.worker_restarts;
    view.push_back(std::move(v));
  }
  m_worker_restarts = restarts;
  const std::vector<json> events = device_events(view);
  share_devices(view, events);
  {
    std::lock_guard lock(m_view_mutex);
    m_view = std::move(view);
  }
  announce_devices(events);
}

void scheduler::announce_devices(const std::vector<json>& events) {
  m_announced.resize(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i] == m_announced[i]) continue;
    m_events.device_changed(events[i]);
    m_announced[i] = events[i];
  }
}

void scheduler::share_devices(const std::vector<device_view>& view,
                              const std::vector<json>& events) {
  // A daemon alone has no one to tell. While the store is away the heartbeat, tried every
  // second, writes them when it gets through; once stopping, the node has left the fleet.
  if (m_config.database.empty() || m_draining || m_heartbeat.failing()) return;
  if (events == m_shared) return;
  try {
    m_store.heartbeat(m_config.node, device_records(view), m_clock.unix_ms());
  } catch (const storage_error& e) {
    spdlog::debug("devices: their new state is not stored yet ({}); the heartbeat stores it",
                  e.what());
    return;
  }
  m_shared = events;
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

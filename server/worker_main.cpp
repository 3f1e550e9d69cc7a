#include "server/worker_main.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "api/job_spec_codec.hpp"
#include "api/worker_protocol.hpp"
#include "engine/compile_watch.hpp"
#include "engine/fault_phase.hpp"
#include "engine/mock_engine.hpp"
#include "engine/opencl/opencl_backend.hpp"
#include "engine/utf8.hpp"
#ifdef KERNELSCAN_HAVE_GPU
#include "engine/hip/hip_engine.hpp"
#endif
#include "server/logging.hpp"
#include "server/point_budget.hpp"

namespace kernelscan {
namespace {

// What a user kernel prints (device printf, which the runtime writes to fd 1) reaches the log
// as "kernel output:" lines, control characters escaped, each cut at k_output_line_bytes, at
// most k_output_window_bytes of them per k_output_window; the rest is read and counted, then
// dropped. A kernel submitted by anyone must neither fill the daemon's log and disk nor write
// lines that read as the daemon's own.
constexpr std::size_t k_output_line_bytes = 512;
constexpr std::size_t k_output_window_bytes = 16 * 1024;
constexpr auto k_output_window = std::chrono::minutes(1);
// How long past its watchdog's deadline a held-out point held for it sleeps (point_budget.hpp):
// the watchdog ends the process long before.
constexpr double k_past_watchdog_ms = 60000;

// Bytes that are not UTF-8 are escaped too: a log line must stay valid UTF-8 (JSON lines with
// --log-format json, and whatever reads the log).
std::string escaped_output(std::string_view line) {
  std::string out;
  const std::string_view kept = line.substr(0, k_output_line_bytes);
  for (std::size_t i = 0; i < kept.size(); ++i) {
    const auto u = static_cast<unsigned char>(kept[i]);
    if (const std::size_t n = u >= 0x80 ? utf8_sequence(kept, i) : 0; n > 0) {
      out.append(kept, i, n);
      i += n - 1;
      continue;
    }
    if (u < 0x20 || u == 0x7f || u >= 0x80) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += kept[i];
    }
  }
  if (line.size() > k_output_line_bytes) out += "... (cut)";
  return out;
}

// Reads fd `from` (the read end of fd 1's pipe) until every writer is gone; runs on a thread
// of its own, so that a kernel's printf never waits for the log.
void drain_output(int from) {
  std::string pending;
  std::size_t logged = 0, dropped = 0;
  auto window = std::chrono::steady_clock::now();
  auto emit = [&](std::string_view line) {
    const auto now = std::chrono::steady_clock::now();
    if (now - window >= k_output_window) {
      if (dropped) spdlog::warn("kernel output: {} more bytes were dropped", dropped);
      window = now;
      logged = dropped = 0;
    }
    if (logged + line.size() > k_output_window_bytes) {
      if (!dropped) {
        spdlog::warn("kernel output: more than {} KiB a minute; the rest is dropped",
                     k_output_window_bytes / 1024);
      }
      dropped += line.size() + 1;
      return;
    }
    logged += line.size() + 1;
    spdlog::info("kernel output: {}", escaped_output(line));
  };
  char chunk[65536];
  for (;;) {
    const ssize_t n = ::read(from, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    pending.append(chunk, std::size_t(n));
    std::size_t start = 0;
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n', start)) {
      emit(std::string_view(pending).substr(start, nl - start));
      start = nl + 1;
    }
    pending.erase(0, start);
    // A line that never ends is taken in pieces.
    if (pending.size() > k_output_line_bytes) {
      emit(pending);
      pending.clear();
    }
  }
  if (!pending.empty()) emit(pending);
  ::close(from);
}

// The protocol has the real stdout to itself: fd 1 is pointed at a pipe that drain_output()
// empties, so that anything else printing (a user kernel's printf, a runtime's diagnostics)
// can neither corrupt the stream nor flood the log.
int take_protocol_fd() {
  const int fd = dup(STDOUT_FILENO);
  int output[2];
  if (fd < 0 || ::pipe2(output, O_CLOEXEC) != 0 || dup2(output[1], STDOUT_FILENO) < 0) {
    spdlog::critical("worker: cannot set up the protocol descriptor: {}", std::strerror(errno));
    std::exit(2);
  }
  ::close(output[1]);
  std::thread(drain_output, output[0]).detach();
  return fd;
}

bool write_all(int fd, const std::string& line) {
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(fd, line.data() + off, line.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += std::size_t(n);
  }
  return true;
}

// Lines from the daemon on fd 0, with a look at whether more input is already waiting (which
// decides whether replies may be held back and written together).
class line_reader {
 public:
  explicit line_reader(int fd) : m_fd(fd) {}

  // Blocks until a whole line is available; false at end of input.
  bool next(std::string& line) {
    for (;;) {
      const auto nl = m_buffer.find('\n', m_pos);
      if (nl != std::string::npos) {
        line.assign(m_buffer, m_pos, nl - m_pos);
        m_pos = nl + 1;
        return true;
      }
      m_buffer.erase(0, m_pos);
      m_pos = 0;
      char chunk[65536];
      const ssize_t n = ::read(m_fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      m_buffer.append(chunk, std::size_t(n));
    }
  }

  // A whole line if one is buffered or can be read without blocking.
  bool next_if_ready(std::string& line) {
    if (m_buffer.find('\n', m_pos) == std::string::npos) {
      pollfd p{m_fd, POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0) return false;
    }
    return next(line);
  }

  bool input_waiting() const {
    if (m_buffer.find('\n', m_pos) != std::string::npos) return true;
    pollfd p{m_fd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }

 private:
  int m_fd;
  std::string m_buffer;
  std::size_t m_pos = 0;
};

// Replies held while more requests wait, written at most this many or this late.
constexpr int k_max_held_replies = 32;
constexpr auto k_max_hold = std::chrono::milliseconds(5);

std::unique_ptr<engine> make_engine(const worker_config& config) {
  if (config.engine == "hip") {
#ifdef KERNELSCAN_HAVE_GPU
    try {
      return make_hip_engine(config.device);
    } catch (const std::exception& e) {
      spdlog::critical("worker: GPU {} cannot be opened: {}", config.device, e.what());
      std::exit(2);
    }
#else
    spdlog::critical("worker: this binary has no GPU engine (built with KERNELSCAN_GPU=off)");
    std::exit(2);
#endif
  }
  if (config.engine == "opencl") {
    try {
      return make_opencl_engine(config.device);
    } catch (const std::exception& e) {
      spdlog::critical("worker: OpenCL device {} cannot be opened: {}", config.device, e.what());
      std::exit(2);
    }
  }
  if (config.engine != "mock") {
    spdlog::critical("worker: engine \"{}\" is not built into this binary", config.engine);
    std::exit(2);
  }
  const device_model* model = find_device_model(config.mock_model);
  if (!model) {
    spdlog::critical("worker: unknown mock model \"{}\"", config.mock_model);
    std::exit(2);
  }
  return std::make_unique<mock_engine>(*model, config.device);
}

// Tests only (with --allow-fault-injection, on a mock device): KERNELSCAN_MOCK_ROOFLINE_FAULT=crash
// crashes the worker in every roofline measurement, as a device that faults there would.
bool roofline_crashes(const worker_config& config) {
  const char* fault = std::getenv("KERNELSCAN_MOCK_ROOFLINE_FAULT");
  return config.allow_fault_injection && config.engine == "mock" && fault &&
         std::string_view(fault) == "crash";
}

// Maps the page the daemon shares with this worker (worker_process::k_phase_fd), where the steps
// of a point are named as they begin (engine/fault_phase.hpp): the daemon reads there what the
// worker was doing once it ended, whatever ended it (a kernel faulting on a CPU device, a stack
// overflow on one of the runtime's threads, the watchdog's SIGKILL). Nothing where the descriptor
// is not such a page.
void share_fault_phases(int fd) {
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::size_t>(st.st_size) < sizeof(fault_phase_page))
    return;
  void* at = mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED,
                  fd, 0);
  ::close(fd);
  if (at == MAP_FAILED) {
    spdlog::warn("cannot map the page shared with the daemon: {}", std::strerror(errno));
    return;
  }
  fault_phase::publish_to(static_cast<fault_phase_page*>(at));
}

}  // namespace

int run_worker(const worker_config& config) {
  const pid_t parent = getppid();
  // Die with the daemon, even if it is killed with SIGKILL and cannot close our stdin.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) return 0;
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // a crashing kernel must not fill the disk with cores

  setup_logging("worker" + std::to_string(config.device), config.log_level, config.log_format);

  const int out = take_protocol_fd();
  if (config.probe) {
    // One ready line per device found: the GPUs of the HIP engine (none in a build without
    // it), then every OpenCL device.
    std::string lines;
#ifdef KERNELSCAN_HAVE_GPU
    for (const auto& d : discover_gpus())
      lines += worker_protocol::ready_line(d);
#endif
    for (const auto& d : discover_opencl_devices())
      lines += worker_protocol::ready_line(d);
    return write_all(out, lines) ? 0 : 1;
  }
  share_fault_phases(config.phase_fd);
  auto eng = make_engine(config);
  spdlog::debug("serving device {} ({}, engine {})", config.device, eng->device().name,
                config.engine);
  if (!write_all(out, worker_protocol::ready_line(eng->device()))) return 1;

  spec_limits limits = spec_limits::stored();
  limits.allow_fault_injection = config.allow_fault_injection;
  std::optional<job_plan> plan;
  std::int64_t plan_job = -1;
  std::string plan_error_message;

  line_reader input(STDIN_FILENO);
  std::deque<worker_protocol::daemon_message> queue;  // requests read but not yet served
  std::string pending;                                // replies not yet written
  std::mutex pending_mutex;  // the compile watch's thread writes them too, then ends us
  int held = 0;
  auto first_held = std::chrono::steady_clock::now();
  auto hold = [&](std::string reply) {
    const std::lock_guard lock(pending_mutex);
    if (held++ == 0) first_held = std::chrono::steady_clock::now();
    pending += reply;
  };
  // Writes the held replies; false if the daemon is gone.
  auto flush = [&] {
    const std::lock_guard lock(pending_mutex);
    const bool ok = write_all(out, pending);
    pending.clear();
    held = 0;
    return ok;
  };
  // A compile past its limit cannot be stopped but by ending the process: the point fails with
  // why (a compile_error, which ends its job: each further point would compile as long again),
  // after the replies held before it.
  std::atomic<std::uint64_t> measuring_seq{0};
  set_compile_limits(
      {config.compile_timeout_s, config.compile_memory_bytes}, [&](const std::string& why) {
        spdlog::error("device {}: {}; this worker exits to be replaced", config.device, why);
        const std::lock_guard lock(pending_mutex);
        write_all(out, pending + worker_protocol::failure_line(measuring_seq.load(),
                                                               "compile_error", why, true));
        std::_Exit(4);
      });
  // Parses an incoming line into the queue; a drop answers the job's queued requests at once.
  auto take = [&](const std::string& text) {
    try {
      auto msg = worker_protocol::parse_daemon_line(text);
      if (msg.type != worker_protocol::daemon_message::kind::drop) {
        queue.push_back(std::move(msg));
        return;
      }
      std::deque<worker_protocol::daemon_message> kept;
      for (auto& m : queue) {
        if (m.type == worker_protocol::daemon_message::kind::measure && m.job == msg.job) {
          hold(worker_protocol::dropped_line(m.seq));
        } else {
          kept.push_back(std::move(m));
        }
      }
      queue = std::move(kept);
    } catch (const worker_protocol::protocol_error& e) {
      spdlog::error("{}", e.what());
      hold(worker_protocol::failure_line(0, "internal", e.what()));
    }
  };

  std::string line;
  for (;;) {
    while (input.next_if_ready(line))
      take(line);
    if (queue.empty()) {
      if (!pending.empty() && !flush()) return 1;
      if (!input.next(line)) break;  // the daemon closed our input: exit
      take(line);
      continue;
    }
    auto msg = std::move(queue.front());
    queue.pop_front();
    if (msg.type == worker_protocol::daemon_message::kind::roofline) {
      if (msg.set_roofline) {
        eng->set_roofline(*msg.set_roofline);
        continue;
      }
      if (roofline_crashes(config)) std::raise(SIGSEGV);
      try {
        hold(worker_protocol::roofline_line(eng->measure_roofline()));
      } catch (const std::exception& e) {
        spdlog::error("roofline measurement failed: {}", e.what());
        hold(worker_protocol::roofline_failure_line(e.what()));
      }
      if (!flush()) return 1;
      if (eng->needs_restart()) {
        spdlog::error(
            "device {}: the device faulted measuring its roofline; this worker exits "
            "to be replaced",
            config.device);
        return 3;
      }
      continue;
    }
    if (msg.type == worker_protocol::daemon_message::kind::job) {
      plan.reset();
      plan_job = msg.job;
      plan_error_message.clear();
      try {
        plan.emplace(compile_plan(parse_job_spec(msg.spec, limits), limits.plan));
      } catch (const validation_error& e) {
        plan_error_message = e.what();
      }
      continue;
    }
    const auto started = std::chrono::steady_clock::now();
    measuring_seq = msg.seq;
    std::string reply;
    try {
      if (msg.job != plan_job) {
        reply = worker_protocol::failure_line(
            msg.seq, "internal",
            "job " + std::to_string(msg.job) + " was not loaded in this worker");
      } else if (!plan) {
        reply = worker_protocol::failure_line(msg.seq, "invalid_spec", plan_error_message);
      } else if (msg.index >= plan->size()) {
        reply = worker_protocol::failure_line(msg.seq, "internal", "point index out of range");
      } else {
        // A compile still running when the point's watchdog would end this worker is stopped a
        // little before, as a compile_error that says so: ended by the watchdog it would be a
        // `timeout` naming no compile, and every further point of the job would compile again.
        const double budget_s = point_budget_s(plan->spec(), config.point_timeout_s);
        char what[96];
        std::snprintf(what, sizeof what, "the point's watchdog budget of %g s", budget_s);
        set_compile_deadline(
            started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(budget_s - std::min(1.0, budget_s / 10))),
            what);
        const auto result = eng->measure_all(*plan, msg.index, plan->spec().seed.value_or(0));
        double wall_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
                .count();
        // A held-out point whose time is a secret is answered on its ladder's rung
        // (point_budget.hpp); the replies held before it go first.
        const point_hold wait =
            held_out_hold(plan->spec(), msg.index, wall_ms,
                          1000.0 * point_budget_s(plan->spec(), config.point_timeout_s));
        if (wait.what != point_hold::kind::none) {
          if (held && !flush()) return 1;
          // Past the watchdog's deadline, which ends this process there.
          const double until = wait.what == point_hold::kind::watchdog
                                   ? wait.wall_ms + k_past_watchdog_ms
                                   : wait.wall_ms;
          std::this_thread::sleep_until(started + std::chrono::duration<double, std::milli>(until));
          wall_ms = until;
        }
        reply = worker_protocol::result_line(msg.seq, wall_ms, result);
      }
    } catch (const std::exception& e) {
      spdlog::error("measurement failed: {}", e.what());
      reply = worker_protocol::failure_line(msg.seq, "internal", e.what());
    }
    hold(std::move(reply));
    if (eng->needs_restart()) {
      // The GPU context is broken: answer, then make way for a fresh process.
      spdlog::error("device {}: the device faulted; this worker exits to be replaced",
                    config.device);
      flush();
      return 3;
    }
    // Hold replies while more requests wait, within bounds; write when none do.
    if (held >= k_max_held_replies || (queue.empty() && !input.input_waiting()) ||
        std::chrono::steady_clock::now() - first_held >= k_max_hold) {
      if (!flush()) return 1;
    }
  }
  if (!pending.empty() && !flush()) return 1;
  return 0;
}

}  // namespace kernelscan

#include "server/worker_supervisor.hpp"

#include <spdlog/spdlog.h>

namespace kernelscan {

std::chrono::milliseconds restart_delay(int start_failures) {
  if (start_failures <= 0) return std::chrono::milliseconds(0);
  return std::chrono::milliseconds(std::min(10000, 100 << std::min(start_failures, 7)));
}

worker_supervisor::worker_supervisor(asio::io_context& io, std::vector<std::string> argv,
                                     double start_timeout_s, handlers h)
    : m_io(io),
      m_argv(std::move(argv)),
      m_start_timeout_s(start_timeout_s),
      m_handlers(std::move(h)),
      m_start_timer(io),
      m_restart_timer(io) {}

worker_supervisor::~worker_supervisor() {
  m_start_timer.cancel();
  m_restart_timer.cancel();
  m_proc.reset();
}

void worker_supervisor::start() {
  m_stopped = false;
  spawn();
}

void worker_supervisor::spawn() {
  m_ready = false;
  try {
    m_proc = std::make_unique<worker_process>(
        m_io, m_argv, [this](std::string_view line) { m_handlers.line(line); },
        [this](const std::string& how) { on_exit(how); });
  } catch (const std::exception& e) {
    m_last_error = std::string("cannot start worker: ") + e.what();
    spdlog::error("{}", m_last_error);
    ++m_start_failures;
    schedule_restart();
    return;
  }
  m_start_timer.expires_after(std::chrono::duration_cast<asio::steady_timer::duration>(
      std::chrono::duration<double>(m_start_timeout_s)));
  m_start_timer.async_wait([this](const asio::error_code& ec) {
    if (ec || m_ready || !m_proc) return;
    m_last_error = "worker did not report ready in time";
    spdlog::error("worker {}: {}", m_proc->pid(), m_last_error);
    m_proc->kill();
  });
  m_handlers.changed();
}

void worker_supervisor::ready() {
  m_ready = true;
  m_start_failures = 0;
  m_start_timer.cancel();
}

void worker_supervisor::send(std::string lines) {
  if (m_proc) m_proc->send(std::move(lines));
}

void worker_supervisor::kill() {
  if (m_proc) m_proc->kill();
}

void worker_supervisor::close_input() {
  m_stopped = true;
  m_restart_timer.cancel();
  if (m_proc) m_proc->close_input();
}

void worker_supervisor::stop() {
  m_stopped = true;
  m_start_timer.cancel();
  m_restart_timer.cancel();
  m_proc.reset();
}

void worker_supervisor::on_exit(const std::string& how) {
  if (!m_ready) ++m_start_failures;
  m_ready = false;
  m_start_timer.cancel();
  m_exit_phase = m_proc ? m_proc->phase() : std::string();
  // Destroy the process object once its callback has returned.
  asio::post(m_io, [p = std::move(m_proc)] {});
  m_handlers.exited(how);
  schedule_restart();
}

void worker_supervisor::schedule_restart() {
  if (m_stopped) return;
  m_handlers.changed();
  m_restart_timer.expires_after(restart_delay(m_start_failures));
  m_restart_timer.async_wait([this](const asio::error_code& ec) {
    if (ec || m_stopped) return;
    ++m_restarts;
    spawn();
  });
}

}  // namespace kernelscan

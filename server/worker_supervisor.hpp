#pragma once
// One device's worker process (DESIGN.md §1): started, watched until it reports ready (one that
// does not within the start timeout is killed), and restarted whenever it exits: at once after a
// crash under load, backing off while it cannot even start (restart_delay()), and reported
// `failed` after five such tries in a row (it keeps trying). What the worker says, and that it
// exited, go to the owner's handlers.
//
// Threading: every method and every handler runs on the io_context's thread.

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "server/worker_process.hpp"

namespace kernelscan {

// The wait before starting a worker again after `start_failures` tries in a row that did not
// reach ready: none after a worker that ran, then 200 ms doubling up to 10 s.
std::chrono::milliseconds restart_delay(int start_failures);

class worker_supervisor {
 public:
  struct handlers {
    std::function<void(std::string_view line)> line;
    // The worker is gone; `how` says how ("was killed by signal 9 (Killed)"), exit_phase() in
    // which step of a point. A restart follows unless stop() was called.
    std::function<void(const std::string& how)> exited;
    // Starting, restarting or failed changed (for views).
    std::function<void()> changed;
  };

  worker_supervisor(asio::io_context& io, std::vector<std::string> argv, double start_timeout_s,
                    handlers h);
  worker_supervisor(const worker_supervisor&) = delete;
  worker_supervisor& operator=(const worker_supervisor&) = delete;
  ~worker_supervisor();

  void start();
  // The worker reported ready: it started.
  void ready();
  void send(std::string lines);
  // Kills the worker (a watchdog, a protocol error); it is restarted.
  void kill();
  // Asks the worker to exit (closes its stdin) and restarts it no more.
  void close_input();
  // Restarts no more and kills a worker still running.
  void stop();

  bool running() const { return m_proc != nullptr; }
  int pid() const { return m_proc ? m_proc->pid() : 0; }
  std::uint64_t restarts() const { return m_restarts; }
  bool restarting() const { return m_restarts > 0; }
  // Five starts in a row did not reach ready.
  bool failed() const { return m_start_failures >= 5; }
  const std::string& last_error() const { return m_last_error; }
  // The step of a point the last worker to end was in as it ended ("" outside every one): see
  // worker_process::phase().
  const std::string& exit_phase() const { return m_exit_phase; }
  void set_last_error(std::string e) { m_last_error = std::move(e); }

 private:
  void spawn();
  void on_exit(const std::string& how);
  void schedule_restart();

  asio::io_context& m_io;
  std::vector<std::string> m_argv;
  double m_start_timeout_s;
  handlers m_handlers;
  std::unique_ptr<worker_process> m_proc;
  asio::steady_timer m_start_timer;
  asio::steady_timer m_restart_timer;
  bool m_ready = false;
  bool m_stopped = false;
  int m_start_failures = 0;
  std::uint64_t m_restarts = 0;
  std::string m_last_error;
  std::string m_exit_phase;
};

}  // namespace kernelscan

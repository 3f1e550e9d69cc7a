#pragma once
// A child process spoken to in lines over pipes: its stdin for requests, its stdout for
// replies; stderr is inherited so its logs join the daemon's. The child runs in its own
// process group, so a terminal's Ctrl-C reaches only the daemon, which then shuts workers down
// in order.
//
// The child also gets, as descriptor k_phase_fd, a page of shared memory where a worker names the
// step of a point it is in (engine/fault_phase.hpp): what it was doing when it died, whatever
// killed it, is read there afterwards.
//
// Threading: every method and every callback runs on the io_context's thread.
// Ownership: the destructor kills (SIGKILL) and reaps a child still running.

#include <sys/types.h>

#include <asio.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kernelscan {

class worker_process {
 public:
  using line_handler = std::function<void(std::string_view line)>;
  // Called once when the child's stdout closes (it exited or crashed); `how` describes its end:
  // "exited with status 1", "was killed by signal 11 (Segmentation fault)".
  using exit_handler = std::function<void(const std::string& how)>;

  // Spawns argv[0] with `argv`. Throws std::system_error if it cannot be started.
  worker_process(asio::io_context& io, const std::vector<std::string>& argv, line_handler on_line,
                 exit_handler on_exit);
  worker_process(const worker_process&) = delete;
  worker_process& operator=(const worker_process&) = delete;
  ~worker_process();

  // The descriptor the shared page has in the child (`kernelscan worker --phase-fd`).
  static constexpr int k_phase_fd = 3;

  pid_t pid() const { return m_pid; }
  // The step the child last named in the shared page ("" for none, or where the page could not be
  // made); read once it ended, it is the step it died in.
  std::string phase() const;
  bool running() const { return m_pid > 0; }
  // Queues a line (must end in '\n') for the child's stdin.
  void send(std::string line);
  // Closes the child's stdin: a worker takes that as the request to exit.
  void close_input();
  void kill();

 private:
  void read_next();
  void write_next();
  void on_closed();

  asio::posix::stream_descriptor m_in;   // our end of the child's stdin
  asio::posix::stream_descriptor m_out;  // our end of the child's stdout
  asio::streambuf m_buffer;
  std::deque<std::string> m_queue;
  bool m_writing = false;
  pid_t m_pid = -1;
  line_handler m_on_line;
  exit_handler m_on_exit;
  std::shared_ptr<bool> m_alive = std::make_shared<bool>(true);
  struct phase_page;
  std::unique_ptr<phase_page> m_phase;
};

}  // namespace kernelscan

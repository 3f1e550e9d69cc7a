#include "server/worker_process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <system_error>
#include <thread>

#include "engine/fault_phase.hpp"

extern char** environ;

namespace kernelscan {
namespace {

constexpr std::size_t k_max_line = 64 * 1024 * 1024;

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = strsignal(sig);
    return "was killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
  }
  return "ended with status " + std::to_string(status);
}

// Waits briefly for a child whose stdout just closed (it is normally exiting), then kills it.
std::string reap(pid_t pid) {
  int status = 0;
  for (int i = 0; i < 500; ++i) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return describe_status(status);
    if (r < 0 && errno != EINTR) return "could not be reaped";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::kill(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return "closed its output and was killed";
}

constexpr std::size_t k_phase_page_bytes = 4096;
static_assert(sizeof(fault_phase_page) <= k_phase_page_bytes);

}  // namespace

// The shared page: a memfd, and this process's mapping of it.
struct worker_process::phase_page {
  int fd = -1;
  fault_phase_page* page = nullptr;

  phase_page() {
    fd = memfd_create("kernelscan-phase", MFD_CLOEXEC);
    if (fd == k_phase_fd) {
      // dup2 onto itself would leave it close-on-exec: the child must find it at k_phase_fd.
      const int other = fcntl(fd, F_DUPFD_CLOEXEC, k_phase_fd + 1);
      ::close(fd);
      fd = other;
    }
    if (fd < 0 || ftruncate(fd, k_phase_page_bytes) != 0) {
      spdlog::warn(
          "cannot share a page with a worker ({}): a worker that dies will not say in "
          "which step",
          std::strerror(errno));
      return;
    }
    void* at = mmap(nullptr, k_phase_page_bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (at == MAP_FAILED) {
      spdlog::warn("cannot map a page shared with a worker: {}", std::strerror(errno));
      return;
    }
    page = static_cast<fault_phase_page*>(at);
  }
  ~phase_page() {
    if (page) munmap(page, k_phase_page_bytes);
    if (fd >= 0) ::close(fd);
  }
  phase_page(const phase_page&) = delete;
  phase_page& operator=(const phase_page&) = delete;
};

namespace {

struct spawn_guard {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  spawn_guard() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~spawn_guard() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

}  // namespace

worker_process::worker_process(asio::io_context& io, const std::vector<std::string>& argv,
                               line_handler on_line, exit_handler on_exit)
    : m_in(io),
      m_out(io),
      m_buffer(k_max_line),
      m_on_line(std::move(on_line)),
      m_on_exit(std::move(on_exit)),
      m_phase(std::make_unique<phase_page>()) {
  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe");
  if (pipe2(from_child, O_CLOEXEC) != 0) {
    const int e = errno;
    close(to_child[0]);
    close(to_child[1]);
    throw std::system_error(e, std::generic_category(), "pipe");
  }
  spawn_guard g;
  posix_spawn_file_actions_adddup2(&g.actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&g.actions, from_child[1], STDOUT_FILENO);
  static_assert(k_phase_fd == STDERR_FILENO + 1);
  if (m_phase->page) posix_spawn_file_actions_adddup2(&g.actions, m_phase->fd, k_phase_fd);
  // Nothing else of the daemon's (listening socket, database) leaks into the worker.
  posix_spawn_file_actions_addclosefrom_np(&g.actions, m_phase->page ? k_phase_fd + 1 : k_phase_fd);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&g.attr, &defaults);
  posix_spawnattr_setsigmask(&g.attr, &none);
  posix_spawnattr_setpgroup(&g.attr, 0);
  posix_spawnattr_setflags(&g.attr,
                           POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);

  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = posix_spawn(&m_pid, argv.at(0).c_str(), &g.actions, &g.attr, args.data(), environ);
  close(to_child[0]);
  close(from_child[1]);
  if (rc != 0) {
    close(to_child[1]);
    close(from_child[0]);
    m_pid = -1;
    throw std::system_error(rc, std::generic_category(), "spawn " + argv.at(0));
  }
  m_in.assign(to_child[1]);
  m_out.assign(from_child[0]);
  read_next();
}

worker_process::~worker_process() {
  *m_alive = false;
  asio::error_code ignored;
  m_in.close(ignored);
  m_out.close(ignored);
  if (m_pid > 0) {
    ::kill(m_pid, SIGKILL);
    int status = 0;
    while (waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

std::string worker_process::phase() const {
  return m_phase->page ? fault_phase::read(*m_phase->page) : std::string();
}

void worker_process::send(std::string line) {
  if (!m_in.is_open()) return;
  m_queue.push_back(std::move(line));
  if (!m_writing) write_next();
}

void worker_process::write_next() {
  if (m_queue.empty() || !m_in.is_open()) {
    m_writing = false;
    return;
  }
  m_writing = true;
  asio::async_write(m_in, asio::buffer(m_queue.front()),
                    [this, alive = m_alive](const asio::error_code& ec, std::size_t) {
                      if (!*alive) return;
                      m_queue.pop_front();
                      if (ec) {
                        // The child is gone; its stdout closing reports that.
                        m_queue.clear();
                        m_writing = false;
                        return;
                      }
                      write_next();
                    });
}

void worker_process::close_input() {
  asio::error_code ignored;
  m_in.close(ignored);
  m_queue.clear();
}

void worker_process::kill() {
  if (m_pid > 0) ::kill(m_pid, SIGKILL);
}

void worker_process::read_next() {
  asio::async_read_until(
      m_out, m_buffer, '\n', [this, alive = m_alive](const asio::error_code& ec, std::size_t n) {
        if (!*alive) return;
        if (ec) {
          if (ec == asio::error::not_found) {
            spdlog::error("worker {} wrote a line longer than {} bytes", m_pid, k_max_line);
          }
          on_closed();
          return;
        }
        const char* data = static_cast<const char*>(m_buffer.data().data());
        std::string_view line(data, n - 1);
        m_on_line(line);
        if (!*alive) return;  // the handler may have destroyed us
        m_buffer.consume(n);
        read_next();
      });
}

void worker_process::on_closed() {
  asio::error_code ignored;
  m_in.close(ignored);
  m_out.close(ignored);
  std::string how = m_pid > 0 ? reap(m_pid) : "was not running";
  m_pid = -1;
  auto on_exit = m_on_exit;
  on_exit(how);  // may destroy this object: nothing after this line
}

}  // namespace kernelscan

#include "server/detail/client_connection.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

namespace kernelscan::detail {

using namespace std::chrono_literals;

namespace {

// How often a wait that may be cut short by a stopping server looks: a stop ends idle
// connections within this, not after their keep-alive or head timeout.
constexpr auto k_stop_check = 200ms;

void numeric_address(const sockaddr_storage& addr, socklen_t length, std::string& ip, int& port) {
  if (addr.ss_family == AF_INET) {
    port = ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    port = ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
  } else {
    return;  // a Unix socket: no address
  }
  char host[NI_MAXHOST] = {};
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), length, host, sizeof host, nullptr, 0,
                  NI_NUMERICHOST) == 0) {
    ip = host;
  }
}

}  // namespace

client_connection::client_connection(int fd, timeouts t, std::function<bool()> stopping)
    : m_fd(fd), m_timeouts(t), m_stopping(std::move(stopping)) {}

client_connection::~client_connection() {
  ::shutdown(m_fd, SHUT_RDWR);
  ::close(m_fd);
}

client_connection::waited client_connection::wait(short events, clock::time_point until,
                                                  bool stoppable) const {
  for (;;) {
    if (stoppable && m_stopping && m_stopping()) return waited::stopped;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(until - clock::now());
    left = std::max(left, 0ms);
    if (stoppable) left = std::min<std::chrono::milliseconds>(left, k_stop_check);
    pollfd p{m_fd, events, 0};
    const int n = ::poll(&p, 1, int(left.count()));
    // Readiness includes the end of the stream and errors: the recv or send that follows says.
    if (n > 0) return waited::ready;
    if (n < 0 && errno != EINTR) return waited::failed;
    if (n == 0 && clock::now() >= until) return waited::timeout;
  }
}

bool client_connection::wait_for_request() {
  if (m_abandoned) return false;
  m_reading = part::none;
  m_answer_bytes = 0;
  m_answer_waited = {};
  m_answer_timed_out = false;
  if (m_begin < m_end) return true;  // a pipelined request is already here
  switch (wait(POLLIN, clock::now() + m_timeouts.idle, true)) {
    case waited::ready:
      return true;
    case waited::stopped:
      m_abandoned = true;
      return false;
    default:
      return false;
  }
}

void client_connection::start_head(clock::time_point deadline, std::size_t max_bytes,
                                   std::size_t max_line) {
  m_reading = part::head;
  m_deadline = deadline;
  m_timed_out = part::none;
  m_head_left = max_bytes;
  m_max_line = max_line;
  m_line = 0;
  m_first_line = true;
  m_head_too_large = too_large::no;
  m_head.clear();
}

void client_connection::end_head() {
  m_reading = part::none;
}

void client_connection::start_body(clock::time_point deadline) {
  m_reading = part::body;
  m_deadline = deadline;
  m_timed_out = part::none;
}

ssize_t client_connection::read(char* out, std::size_t size) {
  if (m_abandoned) return -1;
  if (m_reading == part::head) {
    // The head takes at most m_head_left bytes, and its current line what is left of
    // m_max_line: a read past them fails, and each read is cut to what is left (httplib reads a
    // head a byte at a time).
    if (m_line >= m_max_line) {
      m_head_too_large = m_first_line ? too_large::request_line : too_large::header_line;
      return -1;
    }
    if (m_head_left == 0) {
      m_head_too_large = too_large::head;
      return -1;
    }
    if (m_head.first_flaw() != request_head::flaw::none && m_head.at_line_start()) return -1;
    size = std::min({size, m_head_left, m_max_line - m_line});
    const ssize_t n = read_some(out, size);
    if (n <= 0) return n;
    m_head_left -= static_cast<std::size_t>(n);
    m_head.take(std::string_view(out, static_cast<std::size_t>(n)));
    for (const char c : std::string_view(out, static_cast<std::size_t>(n))) {
      if (c == '\n') {
        m_line = 0;
        m_first_line = false;
      } else {
        ++m_line;
      }
    }
    return n;
  }
  return read_some(out, size);
}

ssize_t client_connection::read_some(char* out, std::size_t size) {
  if (m_begin < m_end) {
    const std::size_t n = std::min(size, m_end - m_begin);
    std::memcpy(out, m_buffer.data() + m_begin, n);
    m_begin += n;
    return ssize_t(n);
  }
  auto until = clock::now() + m_timeouts.read;
  const bool limited = m_reading != part::none;
  if (limited) {
    if (clock::now() >= m_deadline) {
      m_timed_out = m_reading;
      return -1;
    }
    until = std::min(until, m_deadline);
  }
  // What has arrived is taken at once (a request's first bytes usually have: wait_for_request
  // saw them); only an empty socket is waited on. One system call, not two.
  const ssize_t n = receive(out, size, MSG_DONTWAIT);
  if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return n;
  switch (wait(POLLIN, until, limited)) {
    case waited::ready:
      break;
    case waited::timeout:
      if (limited && clock::now() >= m_deadline) m_timed_out = m_reading;
      return -1;
    case waited::stopped:
      m_abandoned = true;
      return -1;
    case waited::failed:
      return -1;
  }
  return receive(out, size, 0);
}

ssize_t client_connection::receive(char* out, std::size_t size, int flags) {
  // A large read (a body) goes straight to the caller; a small one (the head, a byte at a time)
  // takes what has arrived into the buffer.
  const bool direct = size >= m_buffer.size();
  ssize_t n;
  do {
    n = ::recv(m_fd, direct ? out : m_buffer.data(), direct ? size : m_buffer.size(), flags);
  } while (n < 0 && errno == EINTR);
  if (direct || n <= 0) return n;
  const std::size_t taken = std::min(size, std::size_t(n));
  std::memcpy(out, m_buffer.data(), taken);
  m_begin = taken;
  m_end = std::size_t(n);
  return ssize_t(taken);
}

bool client_connection::readable() const {
  if (m_abandoned) return false;
  if (m_begin < m_end) return true;
  return wait(POLLIN, clock::now() + m_timeouts.read, false) == waited::ready;
}

bool client_connection::hung_up() const {
  if (m_abandoned) return true;
  pollfd p{m_fd, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL)) return true;
  // Readable: bytes the client sent after its request (they stay for the next read), or its end.
  char byte = 0;
  return ::recv(m_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

bool client_connection::wait_for_room() {
  if (m_abandoned || m_answer_timed_out) return false;
  const clock::duration allowed =
      m_timeouts.answer_wait +
      std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(
          double(m_answer_bytes) / double(std::max<std::uint64_t>(m_timeouts.answer_rate, 1))));
  const auto left = allowed - m_answer_waited;
  if (left <= clock::duration::zero()) {
    m_answer_timed_out = true;
    return false;
  }
  const auto started = clock::now();
  const waited w =
      wait(POLLOUT, started + std::min<clock::duration>(m_timeouts.write, left), false);
  m_answer_waited += clock::now() - started;
  if (w == waited::ready) return true;
  if (w == waited::timeout && m_answer_waited >= allowed) m_answer_timed_out = true;
  return false;
}

bool client_connection::writable() {
  if (!wait_for_room()) return false;
  // Has the client closed? (An event stream learns so here, as httplib's own stream does.)
  pollfd p{m_fd, POLLIN, 0};
  const int n = ::poll(&p, 1, 0);
  if (n == 0) return true;
  if (n < 0) return false;
  char byte;
  return ::recv(m_fd, &byte, 1, MSG_PEEK) > 0;
}

ssize_t client_connection::write(const char* data, std::size_t size) {
  if (m_abandoned || m_answer_timed_out) return -1;
  // Sent at once where the socket has room, as it nearly always has: one system call, not the
  // three of waiting for room and asking whether the client is still there first. (A closed
  // client fails the send; an event stream asks writable() between its messages.)
  for (;;) {
    const ssize_t n = ::send(m_fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
      m_answer_bytes += std::uint64_t(n);
      return n;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    if (!wait_for_room()) return -1;
  }
}

// Each is asked once per request (httplib): asked of the socket once per connection.
void client_connection::peer_address(std::string& ip, int& port) const {
  known_address(m_peer, ::getpeername, ip, port);
}

void client_connection::local_address(std::string& ip, int& port) const {
  known_address(m_local, ::getsockname, ip, port);
}

void client_connection::known_address(std::optional<address>& known,
                                      int (*ask)(int, sockaddr*, socklen_t*), std::string& ip,
                                      int& port) const {
  if (!known) {
    known = address{};
    sockaddr_storage addr{};
    socklen_t length = sizeof addr;
    if (ask(m_fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0) {
      numeric_address(addr, length, known->ip, known->port);
    }
  }
  if (known->port >= 0) {
    ip = known->ip;
    port = known->port;
  }
}

void client_connection::close_gracefully(std::chrono::milliseconds limit) {
  ::shutdown(m_fd, SHUT_WR);
  const auto until = clock::now() + limit;
  std::array<char, 4096> dropped;
  while (wait(POLLIN, until, false) == waited::ready) {
    const ssize_t n = ::recv(m_fd, dropped.data(), dropped.size(), 0);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  m_begin = m_end = 0;
}

accept_failure classify_accept_error(int err) {
  switch (err) {
    // Linux's accept() returns a new connection's pending network error (accept(2): "treat them
    // like EAGAIN by retrying"), and a connection aborted while queued.
    case EAGAIN:
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
#endif
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
    case EPERM:  // a firewall rule refused this connection
      return accept_failure::retry;
    case EMFILE:
    case ENFILE:
    case ENOBUFS:
    case ENOMEM:
      return accept_failure::pause;
    default:  // EBADF, EINVAL, ENOTSOCK, EFAULT: no listening socket to accept on
      return accept_failure::stop;
  }
}

}  // namespace kernelscan::detail

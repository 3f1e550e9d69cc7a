#pragma once
// A client that sends a daemon bytes as they are, for tests of what its HTTP server does with
// requests no HTTP library would send: slow, cut off, malformed or ambiguous ones.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kernelscan::testing {

// A connection to the daemon on loopback `port`.
inline int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    throw std::runtime_error("cannot connect to the daemon");
  }
  return fd;
}

// What arrives on `fd` until the daemon closes it or `timeout` passes; then closes `fd`.
inline std::string read_until_closed(int fd, std::chrono::milliseconds timeout) {
  std::string in;
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return in;
}

// Sends `request` on a new connection and reads until the daemon closes it or `timeout` passes.
inline std::string exchange_until_closed(int port, const std::string& request,
                                         std::chrono::milliseconds timeout) {
  const int fd = connect_to(port);
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  return read_until_closed(fd, timeout);
}

}  // namespace kernelscan::testing

#include "server/detail/client_connection.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

namespace kernelscan::detail {
namespace {

using namespace std::chrono_literals;
using clock = client_connection::clock;

// A connection over one end of a socket pair; the test plays the client on the other.
struct pair_fixture {
  pair_fixture() {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) throw std::runtime_error("socketpair");
    server_fd = fds[0];
    client_fd = fds[1];
  }
  ~pair_fixture() {
    if (client_fd >= 0) close(client_fd);
  }
  void send_text(const std::string& s) const {
    ASSERT_EQ(::send(client_fd, s.data(), s.size(), MSG_NOSIGNAL), ssize_t(s.size()));
  }
  int server_fd = -1;  // owned by the connection under test
  int client_fd = -1;
};

client_connection::timeouts short_timeouts() {
  return {.read = 2000ms, .write = 2000ms, .idle = 2000ms};
}

TEST(ClientConnection, AHeadTricklingPastItsDeadlineIsCutThoughEachByteCameInTime) {
  pair_fixture p;
  client_connection c(p.server_fd, short_timeouts(), [] { return false; });
  std::atomic<bool> done{false};
  std::thread trickler([&] {
    while (!done) {
      ::send(p.client_fd, "x", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(20ms);
    }
  });
  const auto t0 = clock::now();
  c.start_head(t0 + 300ms);
  char byte;
  int bytes = 0;
  while (c.read(&byte, 1) == 1)
    ++bytes;
  const auto took = clock::now() - t0;
  done = true;
  trickler.join();
  EXPECT_TRUE(c.head_timed_out());
  EXPECT_GT(bytes, 3);
  EXPECT_GE(took, 280ms);
  EXPECT_LT(took, 1000ms);  // each read's own timeout is 2 s
}

TEST(ClientConnection, AHeadPastItsBytesIsCut) {
  pair_fixture p;
  client_connection c(p.server_fd, short_timeouts(), [] { return false; });
  p.send_text(std::string(20, 'h') + "body");
  c.start_head(clock::now() + 1s, 10);
  char byte;
  int bytes = 0;
  while (c.read(&byte, 1) == 1)
    ++bytes;
  EXPECT_EQ(bytes, 10);
  EXPECT_TRUE(c.head_too_large());
  EXPECT_FALSE(c.head_timed_out());
}

TEST(ClientConnection, AHeadLinePastItsBytesIsCutAndSaysWhichLineItWas) {
  // 10 bytes a line, the line feed included: "GET / 12\r\n" takes all of them.
  for (const auto& [head, request_line] :
       {std::pair<std::string, bool>{"GET / 123\r\nHost: x\r\n\r\n", true},
        {"GET / 12\r\nX: 1234567\r\n\r\n", false},
        {"GET / 12\r\nX: 12345\r\n" + std::string(20, 'h'), false}}) {
    SCOPED_TRACE(head);
    pair_fixture p;
    client_connection c(p.server_fd, short_timeouts(), [] { return false; });
    p.send_text(head);
    c.start_head(clock::now() + 1s, 100, 10);
    char byte;
    std::string read;
    while (c.read(&byte, 1) == 1)
      read += byte;
    EXPECT_TRUE(c.head_too_large());
    EXPECT_EQ(c.request_line_too_long(), request_line);
    EXPECT_EQ(c.header_line_too_long(), !request_line);
    const auto last_line = read.substr(read.find_last_of('\n') + 1);  // npos + 1: all of it
    EXPECT_EQ(last_line.size(), 10u) << read;  // a line's bytes are read, and not one more
  }
  // Lines of 10 bytes each, however many, are whole.
  pair_fixture p;
  client_connection c(p.server_fd, short_timeouts(), [] { return false; });
  p.send_text("GET / 12\r\nX: 12345\r\nY: 12345\r\n\r\n");
  c.start_head(clock::now() + 1s, 100, 10);
  char head[32];
  std::size_t got = 0;
  while (got < sizeof head) {
    const ssize_t n = c.read(head + got, sizeof head - got);
    ASSERT_GT(n, 0);
    got += static_cast<std::size_t>(n);
  }
  EXPECT_FALSE(c.head_too_large());
}

TEST(ClientConnection, AHeadWithinItsBytesLeavesTheBodyUnlimited) {
  pair_fixture p;
  client_connection c(p.server_fd, short_timeouts(), [] { return false; });
  p.send_text("head\r\n" + std::string(100, 'b'));
  c.start_head(clock::now() + 1s, 10);
  char head[6];
  ASSERT_EQ(c.read(head, sizeof head), 6);
  c.end_head();
  char body[200];
  std::size_t got = 0;
  while (got < 100) {
    const ssize_t n = c.read(body + got, sizeof body - got);
    ASSERT_GT(n, 0);
    got += std::size_t(n);
  }
  EXPECT_EQ(got, 100u);
  EXPECT_FALSE(c.head_too_large());
}

TEST(ClientConnection, OnceTheHeadIsReadEachReadHasTheReadTimeoutAlone) {
  pair_fixture p;
  client_connection c(p.server_fd, {.read = 400ms, .write = 400ms, .idle = 400ms},
                      [] { return false; });
  c.start_head(clock::now() + 100ms);
  p.send_text("GET / HTTP/1.1\r\n\r\n");
  char byte;
  ASSERT_EQ(c.read(&byte, 1), 1);
  c.end_head();
  std::this_thread::sleep_for(150ms);  // past the head's deadline
  char rest[64];
  EXPECT_EQ(c.read(rest, sizeof rest), 17);
  std::thread late([&] {
    std::this_thread::sleep_for(200ms);
    p.send_text("body");
  });
  EXPECT_EQ(c.read(rest, sizeof rest), 4);
  late.join();
  EXPECT_FALSE(c.head_timed_out());
  const auto t0 = clock::now();
  EXPECT_EQ(c.read(rest, sizeof rest), -1);
  EXPECT_GE(clock::now() - t0, 380ms);
}

TEST(ClientConnection, ABodyTricklingPastItsDeadlineIsCutThoughEachByteCameInTime) {
  pair_fixture p;
  client_connection c(p.server_fd, short_timeouts(), [] { return false; });
  std::atomic<bool> done{false};
  std::thread trickler([&] {
    while (!done) {
      ::send(p.client_fd, "b", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(20ms);
    }
  });
  const auto t0 = clock::now();
  c.start_body(t0 + 300ms);
  char body[8192];  // a body is read in large pieces, straight from the socket
  int reads = 0;
  while (c.read(body, sizeof body) > 0)
    ++reads;
  const auto took = clock::now() - t0;
  done = true;
  trickler.join();
  EXPECT_TRUE(c.body_timed_out());
  EXPECT_FALSE(c.head_timed_out());
  EXPECT_GT(reads, 3);
  EXPECT_GE(took, 280ms);
  EXPECT_LT(took, 1000ms);  // each read's own timeout is 2 s
}

TEST(ClientConnection, TheNextRequestIsNotHeldToTheLastBodysDeadline) {
  pair_fixture p;
  client_connection c(p.server_fd, short_timeouts(), [] { return false; });
  p.send_text("body");
  c.start_body(clock::now() + 100ms);
  char buf[8192];
  ASSERT_EQ(c.read(buf, sizeof buf), 4);
  std::this_thread::sleep_for(150ms);  // past the body's deadline, between requests
  p.send_text("GET / HTTP/1.1\r\n");
  ASSERT_TRUE(c.wait_for_request());
  c.start_head(clock::now() + 1s);
  EXPECT_EQ(c.read(buf, 3), 3);
  EXPECT_FALSE(c.body_timed_out());
}

TEST(ClientConnection, AStoppingServerAbandonsABodyStillArriving) {
  pair_fixture p;
  std::atomic<bool> stopping{false};
  client_connection c(p.server_fd, {.read = 5000ms, .write = 5000ms, .idle = 5000ms},
                      [&] { return stopping.load(); });
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    stopping = true;
  });
  c.start_body(clock::now() + 5s);
  const auto t0 = clock::now();
  char buf[8192];
  EXPECT_EQ(c.read(buf, sizeof buf), -1);
  EXPECT_LT(clock::now() - t0, 1000ms);
  stopper.join();
  EXPECT_TRUE(c.abandoned());
}

TEST(ClientConnection, APipelinedRequestIsNotLostInTheBuffer) {
  pair_fixture p;
  client_connection c(p.server_fd, short_timeouts(), [] { return false; });
  p.send_text("A\nB\n");
  char byte;
  ASSERT_EQ(c.read(&byte, 1), 1);
  ASSERT_EQ(c.read(&byte, 1), 1);
  EXPECT_EQ(byte, '\n');
  const auto t0 = clock::now();
  EXPECT_TRUE(c.wait_for_request());
  EXPECT_LT(clock::now() - t0, 50ms);
  ASSERT_EQ(c.read(&byte, 1), 1);
  EXPECT_EQ(byte, 'B');
}

TEST(ClientConnection, AStoppingServerEndsTheWaitForARequestAtOnce) {
  pair_fixture p;
  std::atomic<bool> stopping{false};
  client_connection c(p.server_fd, {.read = 5000ms, .write = 5000ms, .idle = 5000ms},
                      [&] { return stopping.load(); });
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    stopping = true;
  });
  const auto t0 = clock::now();
  EXPECT_FALSE(c.wait_for_request());
  EXPECT_LT(clock::now() - t0, 1000ms);
  stopper.join();
  EXPECT_TRUE(c.abandoned());
}

TEST(ClientConnection, TheIdleTimeoutEndsTheWaitForARequest) {
  pair_fixture p;
  client_connection c(p.server_fd, {.read = 5000ms, .write = 5000ms, .idle = 300ms},
                      [] { return false; });
  const auto t0 = clock::now();
  EXPECT_FALSE(c.wait_for_request());
  EXPECT_GE(clock::now() - t0, 290ms);
  EXPECT_FALSE(c.abandoned());
}

TEST(ClientConnection, NotWritableOnceTheClientHasClosed) {
  pair_fixture p;
  client_connection c(p.server_fd, short_timeouts(), [] { return false; });
  EXPECT_TRUE(c.writable());
  EXPECT_EQ(c.write("hi", 2), 2);
  close(p.client_fd);
  p.client_fd = -1;
  EXPECT_FALSE(c.writable());
  EXPECT_EQ(c.write("hi", 2), -1);
}

TEST(ClientConnection, AnAnswerTheClientDoesNotTakeFailsWhenItsWaitIsSpent) {
  pair_fixture p;
  // Each write may wait 5 s; the answer's writes 300 ms in all, and a second more per MiB.
  client_connection c(p.server_fd,
                      {.read = 5000ms,
                       .write = 5000ms,
                       .idle = 5000ms,
                       .answer_wait = 300ms,
                       .answer_rate = 1024 * 1024},
                      [] { return false; });
  const std::string piece(16384, 'a');
  std::uint64_t written = 0;
  const auto t0 = clock::now();
  for (;;) {
    const ssize_t n = c.write(piece.data(), piece.size());
    if (n <= 0) break;
    written += std::uint64_t(n);
  }
  const auto took = clock::now() - t0;
  EXPECT_TRUE(c.answer_timed_out());
  EXPECT_GT(written, 0u);
  // 300 ms, and a second per MiB the socket took before it filled.
  const auto allowed = 300ms + std::chrono::milliseconds(written * 1000 / (1024 * 1024));
  EXPECT_GE(took, allowed - 20ms);
  EXPECT_LT(took, allowed + 700ms);
  EXPECT_FALSE(c.writable());
}

TEST(ClientConnection, AnAnswerTakenAsItIsWrittenNeverSpendsItsWait) {
  pair_fixture p;
  client_connection c(
      p.server_fd,
      {.read = 2000ms, .write = 2000ms, .idle = 2000ms, .answer_wait = 100ms, .answer_rate = 1024},
      [] { return false; });
  std::atomic<bool> done{false};
  std::thread reader([&] {
    char buf[65536];
    while (!done)
      if (::recv(p.client_fd, buf, sizeof buf, MSG_DONTWAIT) <= 0) std::this_thread::sleep_for(1ms);
  });
  // An event stream: small writes with pauses between them, longer in all than the wait.
  const auto t0 = clock::now();
  bool ok = true;
  while (clock::now() - t0 < 400ms) {
    ok = ok && c.write("event\n", 6) == 6;
    std::this_thread::sleep_for(20ms);
  }
  done = true;
  reader.join();
  EXPECT_TRUE(ok);
  EXPECT_FALSE(c.answer_timed_out());
}

TEST(ClientConnection, EachRequestsAnswerHasAWaitOfItsOwn) {
  pair_fixture p;
  client_connection c(p.server_fd,
                      {.read = 2000ms,
                       .write = 150ms,
                       .idle = 2000ms,
                       .answer_wait = 200ms,
                       .answer_rate = 1ull << 40},
                      [] { return false; });
  // Writes until the socket is full; how long the write that failed waited.
  const auto fill = [&] {
    const std::string piece(16384, 'a');
    for (;;) {
      const auto t0 = clock::now();
      if (c.write(piece.data(), piece.size()) <= 0) return clock::now() - t0;
    }
  };
  // The write that fails waits its 150 ms: 50 ms of the answer's wait are left.
  EXPECT_GE(fill(), 140ms);
  EXPECT_FALSE(c.answer_timed_out());
  char buf[1 << 16];
  while (::recv(p.client_fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
  p.send_text("GET / HTTP/1.1\r\n");
  ASSERT_TRUE(c.wait_for_request());
  // The next answer's writes may wait 200 ms again, not the last one's 50.
  EXPECT_GE(fill(), 140ms);
  EXPECT_FALSE(c.answer_timed_out());
  // Now the wait is spent.
  EXPECT_FALSE(c.writable());
  EXPECT_TRUE(c.answer_timed_out());
  while (::recv(p.client_fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
  p.send_text("GET / HTTP/1.1\r\n");
  ASSERT_TRUE(c.wait_for_request());
  EXPECT_FALSE(c.answer_timed_out());
  EXPECT_TRUE(c.writable());
}

TEST(ClientConnection, CloseGracefullyEndsTheStreamAndDropsWhatTheClientStillSends) {
  pair_fixture p;
  client_connection c(p.server_fd, short_timeouts(), [] { return false; });
  ASSERT_EQ(c.write("answer", 6), 6);
  p.send_text(std::string(10000, 'b'));  // a body the server will not read
  std::string got;
  std::thread client([&] {
    char buf[64];
    ssize_t n;
    while ((n = ::recv(p.client_fd, buf, sizeof buf, 0)) > 0)
      got.append(buf, std::size_t(n));
    close(p.client_fd);
  });
  const auto t0 = clock::now();
  c.close_gracefully(2000ms);
  // The client read the answer to its end and closed: the drain ended then, not at its limit.
  EXPECT_LT(clock::now() - t0, 1000ms);
  client.join();
  p.client_fd = -1;
  EXPECT_EQ(got, "answer");
}

// Linux's accept() passes a new connection's pending network error, and a connection aborted
// while queued: the accepting thread goes on to the next connection. Want of descriptors or
// memory pauses it; only a listening socket that is gone stops it.
TEST(AcceptErrors, AConnectionsOwnFailureIsRetriedAndOnlyALostListenerStops) {
  for (const int err : {ECONNABORTED, EPROTO, ENETUNREACH, EHOSTUNREACH, ENETDOWN, EHOSTDOWN,
                        ENONET, ENOPROTOOPT, EOPNOTSUPP, EPERM, EINTR, EAGAIN}) {
    EXPECT_EQ(classify_accept_error(err), accept_failure::retry) << std::strerror(err);
  }
  for (const int err : {EMFILE, ENFILE, ENOBUFS, ENOMEM})
    EXPECT_EQ(classify_accept_error(err), accept_failure::pause) << std::strerror(err);
  for (const int err : {EBADF, EINVAL, ENOTSOCK, EFAULT})
    EXPECT_EQ(classify_accept_error(err), accept_failure::stop) << std::strerror(err);
}

}  // namespace
}  // namespace kernelscan::detail

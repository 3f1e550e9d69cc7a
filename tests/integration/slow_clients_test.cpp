// Slow clients against a real daemon: heads that trickle in a header line at a time must not
// keep others from being served, are cut at their deadline, and a body declared over the limit is
// refused before it is sent.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <optional>
#include <thread>

#include "tests/support/daemon_process.hpp"
#include "tests/support/raw_client.hpp"
#include "tests/support/sse_reader.hpp"

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

// The fewest HTTP threads the daemon accepts: 4 more than the long polls and event streams.
const std::vector<std::string> k_few_threads = {"--http-threads",      "6", "--max-long-polls", "1",
                                                "--max-event-streams", "1"};

// Connections that each send a request line and then one more header line every `every`, never
// ending the head, as a slowloris client does. They keep what the daemon sends them and note when
// it closes them.
class slow_heads {
 public:
  slow_heads(int port, int count, std::chrono::milliseconds every) : m_every(every) {
    for (int i = 0; i < count; ++i) {
      m_connections.push_back({connect_to(port), "", std::nullopt});
      send_line(m_connections.back(), "GET /healthz HTTP/1.1\r\nHost: x\r\n");
    }
    m_started = clock::now();
    m_thread = std::thread([this] { run(); });
  }
  slow_heads(const slow_heads&) = delete;
  slow_heads& operator=(const slow_heads&) = delete;
  ~slow_heads() {
    {
      std::lock_guard lock(m_mutex);
      m_stop = true;
    }
    m_thread.join();
    for (const auto& c : m_connections)
      close(c.fd);
  }

  int still_open() const {
    std::lock_guard lock(m_mutex);
    int n = 0;
    for (const auto& c : m_connections)
      n += !c.closed_after;
    return n;
  }
  bool all_closed_within(std::chrono::milliseconds timeout) const {
    return eventually([this] { return still_open() == 0; }, timeout);
  }
  // What each connection received, and how long after the start it was closed.
  std::vector<std::pair<std::string, clock::duration>> closed() const {
    std::lock_guard lock(m_mutex);
    std::vector<std::pair<std::string, clock::duration>> out;
    for (const auto& c : m_connections)
      if (c.closed_after) out.emplace_back(c.received, *c.closed_after);
    return out;
  }

 private:
  struct connection {
    int fd;
    std::string received;
    std::optional<clock::duration> closed_after;
  };

  static bool send_line(const connection& c, const std::string& line) {
    return send(c.fd, line.data(), line.size(), MSG_NOSIGNAL) == ssize_t(line.size());
  }

  void run() {
    auto next = clock::now() + m_every;
    for (int line = 0;; ++line) {
      while (clock::now() < next) {
        std::vector<pollfd> fds;
        {
          std::lock_guard lock(m_mutex);
          if (m_stop) return;
          for (const auto& c : m_connections)
            fds.push_back({c.fd, short(c.closed_after ? 0 : POLLIN), 0});
        }
        if (poll(fds.data(), fds.size(), 20) <= 0) continue;
        std::lock_guard lock(m_mutex);
        for (std::size_t i = 0; i < fds.size(); ++i) {
          if (!fds[i].revents) continue;
          auto& c = m_connections[i];
          char buf[4096];
          const ssize_t n = recv(c.fd, buf, sizeof buf, 0);
          if (n > 0) {
            c.received.append(buf, std::size_t(n));
          } else {
            c.closed_after = clock::now() - m_started;
          }
        }
      }
      next += m_every;
      std::lock_guard lock(m_mutex);
      for (auto& c : m_connections) {
        if (!c.closed_after) send_line(c, "X-Slow-" + std::to_string(line) + ": y\r\n");
      }
    }
  }

  std::chrono::milliseconds m_every;
  std::vector<connection> m_connections;
  clock::time_point m_started;
  mutable std::mutex m_mutex;
  bool m_stop = false;
  std::thread m_thread;
};

TEST(SlowClients, AFreshClientIsAnsweredWhileSlowHeadsOutnumberTheThreads) {
  daemon_process daemon({.extra_args = k_few_threads});
  daemon.start();
  // Three slow heads per thread, each holding the connection it came on.
  slow_heads slow(daemon.port(), 18, 500ms);
  std::this_thread::sleep_for(500ms);
  httplib::Client c("127.0.0.1", daemon.port());
  c.set_connection_timeout(2s);
  c.set_read_timeout(2s);
  const auto t0 = clock::now();
  const auto r = c.Get("/healthz");
  const auto took = clock::now() - t0;
  ASSERT_TRUE(r) << httplib::to_string(r.error()) << " after "
                 << std::chrono::duration<double>(took).count() << " s";
  EXPECT_EQ(r->status, 200);
  EXPECT_LT(took, 2s);
  EXPECT_EQ(slow.still_open(), 18);  // they were all still there, within their deadline
}

TEST(SlowClients, ABurstOfConnectionsIsAcceptedWithoutDroppingAny) {
  daemon_process daemon({.extra_args = k_few_threads});
  daemon.start();
  // 100 clients connecting at once. With a listen backlog of 5, the kernel dropped the SYNs
  // of those past it, and each connect took a second more (the SYN's first retry).
  std::vector<int> fds;
  clock::duration slowest{};
  for (int i = 0; i < 100; ++i) {
    const auto t0 = clock::now();
    fds.push_back(connect_to(daemon.port()));
    slowest = std::max(slowest, clock::now() - t0);
  }
  EXPECT_LT(slowest, 500ms);
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  for (const int fd : fds)
    send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  int answered = 0;
  for (const int fd : fds)
    answered += read_until_closed(fd, 10s).rfind("HTTP/1.1 200", 0) == 0;
  EXPECT_EQ(answered, 100);
}

TEST(SlowClients, PastTheThreadCapOnlySoManyConnectionsWaitAndTheRestAreAnswered503) {
  daemon_process daemon({.extra_args = k_few_threads});
  daemon.start();
  // 6 threads grow to 96, and then 96 connections may wait (the open-file limit allowing):
  // of 200 slow heads, 8 are answered at once. The thread that answered start()'s last request
  // is given time to be idle again: on a loaded machine it could still be closing that
  // connection as the heads arrive, and one more head would then be refused.
  std::this_thread::sleep_for(300ms);
  {
    slow_heads slow(daemon.port(), 200, 500ms);
    ASSERT_TRUE(eventually([&] { return slow.still_open() <= 192; }, 5s))
        << slow.still_open() << " still open";
    std::this_thread::sleep_for(300ms);
    const auto closed = slow.closed();
    EXPECT_EQ(closed.size(), 8u);
    for (const auto& [received, after] : closed) {
      EXPECT_EQ(received.rfind("HTTP/1.1 503", 0), 0u) << received;
      EXPECT_NE(received.find("\"overloaded\""), std::string::npos) << received;
      EXPECT_NE(received.find("Retry-After: 1"), std::string::npos) << received;
      EXPECT_LT(after, 5s);
    }
  }
  // The slow heads gone, the daemon answers again.
  EXPECT_TRUE(eventually([&] { return daemon.get("/healthz").status == 200; }, 10s));
  EXPECT_NE(
      daemon.get("/metrics")
          .text.find(
              "kernelscan_http_requests_total{method=\"other\",route=\"unrouted\",code=\"503\"} 8"),
      std::string::npos);
}

TEST(SlowClients, LongPollAndEventStreamLimitsStillAnswer429WhileSlowHeadsAreOpen) {
  daemon_process daemon({.extra_args = k_few_threads});
  daemon.start();
  slow_heads slow(daemon.port(), 12, 500ms);
  // 20 s of 100 ms points: it runs throughout, and a cancel ends it after the current point.
  const std::int64_t id = daemon.submit(stream_sweep(200, 100));
  const std::string job = "/api/v1/jobs/" + std::to_string(id);
  std::thread waiter([&] { daemon.get(job + "?wait=30"); });
  EXPECT_TRUE(eventually([&] {
    return daemon.get("/metrics").text.find("\nkernelscan_long_polls 1\n") != std::string::npos;
  }));
  const auto second = daemon.get(job + "?wait=1");
  EXPECT_EQ(second.status, 429) << second.text;
  EXPECT_EQ(second.body["error"]["type"], "too_many_waiters");
  EXPECT_EQ(daemon.post(job + "/cancel", "").status, 200);
  waiter.join();

  sse_reader stream(daemon.port());
  EXPECT_TRUE(stream.wait_ready());
  const auto another = daemon.get("/api/v1/events");
  EXPECT_EQ(another.status, 429) << another.text;
  EXPECT_EQ(another.body["error"]["type"], "too_many_streams");
}

TEST(SlowClients, AHeadStillTricklingAtItsDeadlineIsAnswered408AndClosed) {
  daemon_process daemon({.extra_args = k_few_threads});
  daemon.start();
  // A header line every 500 ms: each read is well within the 30 s read timeout, and the head
  // never ends.
  slow_heads slow(daemon.port(), 2, 500ms);
  ASSERT_TRUE(slow.all_closed_within(14s)) << slow.still_open() << " still open";
  for (const auto& [received, after] : slow.closed()) {
    EXPECT_EQ(received.rfind("HTTP/1.1 408", 0), 0u) << received;
    EXPECT_NE(received.find("\"request_timeout\""), std::string::npos) << received;
    EXPECT_NE(received.find("Connection: close"), std::string::npos) << received;
    EXPECT_GE(after, 9s);
    EXPECT_LT(after, 13s);
  }
  EXPECT_EQ(daemon.get("/healthz").status, 200);
}

TEST(SlowClients, ABodyStillTricklingAtItsDeadlineIsAnswered408AndClosed) {
  daemon_process daemon({.extra_args = k_few_threads});
  daemon.start();
  // 70,000 bytes declared: 10 s and a second for each 64 KiB begun, 12 s in all. A byte every
  // 200 ms is well within each read's 30 s timeout, and would take four hours.
  const int fd = connect_to(daemon.port());
  const std::string head =
      "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 70000\r\n\r\n";
  ASSERT_EQ(send(fd, head.data(), head.size(), MSG_NOSIGNAL), ssize_t(head.size()));
  const auto t0 = clock::now();
  std::string received;
  std::optional<clock::duration> closed_after;
  auto next_byte = t0;
  while (!closed_after && clock::now() - t0 < 20s) {
    if (clock::now() >= next_byte) {
      send(fd, " ", 1, MSG_NOSIGNAL);
      next_byte += 200ms;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      received.append(buf, std::size_t(n));
    } else {
      closed_after = clock::now() - t0;
    }
  }
  close(fd);
  ASSERT_TRUE(closed_after) << received;
  EXPECT_EQ(received.rfind("HTTP/1.1 408", 0), 0u) << received;
  EXPECT_NE(received.find("\"request_timeout\""), std::string::npos) << received;
  EXPECT_NE(received.find("request body did not arrive within 12 s"), std::string::npos)
      << received;
  EXPECT_NE(received.find("Connection: close"), std::string::npos) << received;
  EXPECT_GE(*closed_after, 11s);
  EXPECT_LT(*closed_after, 16s);
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 0u);
  EXPECT_NE(
      daemon.get("/metrics")
          .text.find(
              "kernelscan_http_requests_total{method=\"POST\",route=\"unrouted\",code=\"408\"} 1"),
      std::string::npos);
}

TEST(SlowClients, AHeadOfTooManyHeaderLinesIsAnswered431AndClosed) {
  daemon_process daemon;
  daemon.start();
  std::string head = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 100; ++i)
    head += "X-Filler-" + std::to_string(i) + ": " + std::string(1000, 'f') + "\r\n";
  const auto answer = exchange_until_closed(daemon.port(), head + "\r\n", 10s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 431", 0), 0u) << answer.substr(0, 200);
  EXPECT_NE(answer.find("\"header_fields_too_large\""), std::string::npos) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  EXPECT_EQ(daemon.get("/healthz").status, 200);
  // Answered before any route saw it, and counted so.
  EXPECT_NE(
      daemon.get("/metrics")
          .text.find(
              "kernelscan_http_requests_total{method=\"GET\",route=\"unrouted\",code=\"431\"} 1"),
      std::string::npos);
}

TEST(SlowClients, ABodyDeclaredOverTheLimitOrChunkedIsRefusedBeforeItIsSent) {
  daemon_process daemon({.extra_args = {"--max-body-bytes", "4096"}});
  daemon.start();
  const std::string head =
      "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 100000000\r\n";
  for (const std::string expect : {"", "Expect: 100-continue\r\n"}) {
    const auto t0 = clock::now();
    const auto answer = exchange_until_closed(daemon.port(), head + expect + "\r\n", 10s);
    EXPECT_LT(clock::now() - t0, 3s) << expect;
    EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
    EXPECT_NE(answer.find("\"payload_too_large\""), std::string::npos) << answer;
    EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
  }
  // A chunked body has no length to check first, and httplib applies no limit to one: it is
  // refused unread, whatever follows.
  const std::string chunked =
      "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n10000\r\n" +
      std::string(4096, ' ');
  const auto t0 = clock::now();
  const auto answer = exchange_until_closed(daemon.port(), chunked, 10s);
  EXPECT_LT(clock::now() - t0, 3s);
  EXPECT_EQ(answer.rfind("HTTP/1.1 411", 0), 0u) << answer;
  EXPECT_NE(answer.find("\"length_required\""), std::string::npos) << answer;
  EXPECT_NE(answer.find("Connection: close"), std::string::npos) << answer;
}

}  // namespace
}  // namespace kernelscan::testing

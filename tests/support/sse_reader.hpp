#pragma once
// Reads a daemon's event stream (GET /api/v1/events) on a thread, parsing Server-Sent Events as
// they arrive, for tests.

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/json.hpp"

namespace kernelscan::testing {

struct sse_event {
  std::string id, type;
  json data;
};

// Reads an event stream on a thread until stop() or the server ends it, parsing events as
// they arrive.
class sse_reader {
 public:
  sse_reader(int port, httplib::Headers headers = {}) : m_client("127.0.0.1", port) {
    m_client.set_read_timeout(std::chrono::seconds(60));
    m_thread = std::thread([this, headers] {
      auto res = m_client.Get("/api/v1/events", headers, [this](const char* data, std::size_t n) {
        std::lock_guard lock(m_mutex);
        m_raw.append(data, n);
        parse();
        return !m_stop;
      });
      std::lock_guard lock(m_mutex);
      if (res) m_status = res->status;
      m_ended = true;
    });
  }
  ~sse_reader() { stop(); }
  void stop() {
    {
      std::lock_guard lock(m_mutex);
      m_stop = true;
    }
    m_client.stop();
    if (m_thread.joinable()) m_thread.join();
  }
  std::vector<sse_event> events() const {
    std::lock_guard lock(m_mutex);
    return m_events;
  }
  bool has(const std::function<bool(const sse_event&)>& pred) const {
    std::lock_guard lock(m_mutex);
    return std::any_of(m_events.begin(), m_events.end(), pred);
  }
  bool ended() const {
    std::lock_guard lock(m_mutex);
    return m_ended;
  }
  // Waits up to `timeout` for the stream's `ready` event, which the daemon sends once the stream
  // is subscribed: events before it are not this stream's to see. True once it came.
  bool wait_ready(std::chrono::milliseconds timeout = std::chrono::seconds(10)) const {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (has([](const sse_event& e) { return e.type == "ready"; })) return true;
      if (ended() || std::chrono::steady_clock::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  void parse() {
    for (;;) {
      const auto end = m_raw.find("\n\n");
      if (end == std::string::npos) return;
      const std::string block = m_raw.substr(0, end);
      m_raw.erase(0, end + 2);
      sse_event e;
      std::string data;
      std::size_t from = 0;
      while (from < block.size()) {
        auto nl = block.find('\n', from);
        if (nl == std::string::npos) nl = block.size();
        const std::string line = block.substr(from, nl - from);
        from = nl + 1;
        if (line.rfind("id: ", 0) == 0) e.id = line.substr(4);
        if (line.rfind("event: ", 0) == 0) e.type = line.substr(7);
        if (line.rfind("data: ", 0) == 0) data += line.substr(6);
      }
      if (e.type.empty()) continue;  // retry: and keep-alive comments
      e.data = json::parse(data);
      m_events.push_back(std::move(e));
    }
  }

  httplib::Client m_client;
  std::thread m_thread;
  mutable std::mutex m_mutex;
  std::string m_raw;
  std::vector<sse_event> m_events;
  bool m_stop = false, m_ended = false;
  int m_status = 0;
};

}  // namespace kernelscan::testing

#pragma once
// The daemon's change feed for GET /api/v1/events (Server-Sent Events): job state changes,
// stored points, tasks and devices, each with a sequence id, kept in a bounded ring so that a
// client reconnecting with Last-Event-ID gets what it missed (or a `reset` when it missed too
// much).
//
// In a fleet the hub's own events are relayed to the other nodes, and theirs are published
// here, so that an events stream of any node carries every node's jobs and points.
//
// Threading: thread-safe. publish() is called from the scheduler's thread and HTTP handlers;
// wait() from HTTP threads serving event streams. publish() never waits for a reader.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace kernelscan {

struct hub_event {
  std::uint64_t id = 0;  // increasing by 1 from the hub's first_id() + 1
  std::string type;      // "job", "points", "task", "device" or "reset"
  std::string data;      // one JSON object on one line (it becomes one SSE data: line)
};

class event_hub {
 public:
  using clock = std::chrono::steady_clock;

  // `before_first`: the id before this hub's first event. A daemon draws it at random (a
  // multiple of 2^32 under 2^53, so that ids stay exact in JavaScript), so that an id another
  // daemon or an earlier run of this one issued is not taken for one of this hub's.
  explicit event_hub(std::size_t capacity = 8192, std::uint64_t before_first = 0)
      : m_capacity(capacity), m_first_id(before_first), m_last_id(before_first) {}

  // An event of this daemon's: kept for this daemon's streams and handed to the relay (the
  // other nodes of a fleet).
  void publish(std::string type, std::string data);
  // An event another node announced: kept for this daemon's streams only.
  void publish_local(std::string type, std::string data);
  // Set once, before events are published; called outside the hub's lock.
  void set_relay(std::function<void(const std::string& type, const std::string& data)> relay) {
    m_relay = std::move(relay);
  }

  struct batch {
    std::vector<hub_event> events;
    bool gap = false;       // events after `after` were already dropped from the ring
    bool stopping = false;  // shutdown(): the stream should end
  };
  // Waits until an event newer than `after` exists (or `deadline`, or shutdown), then lingers
  // `linger` more so that a burst leaves as one batch; returns every event newer than `after`.
  batch wait(std::uint64_t after, clock::time_point deadline, clock::duration linger);

  // The newest event id (first_id() if none yet).
  std::uint64_t last_id() const;
  // The id before this hub's first event: a stream from it gets every event the hub holds.
  std::uint64_t first_id() const { return m_first_id; }
  // Whether `id` is one this hub issued (or its first_id()): one to resume after.
  bool issued(std::uint64_t id) const;
  // Wakes every reader and makes later waits return at once with `stopping`.
  void shutdown();

 private:
  batch collect(std::uint64_t after) const;  // with m_mutex held

  const std::size_t m_capacity;
  const std::uint64_t m_first_id;
  mutable std::mutex m_mutex;
  std::condition_variable m_cv;
  std::deque<hub_event> m_ring;
  std::uint64_t m_last_id;
  bool m_stopping = false;
  std::function<void(const std::string&, const std::string&)> m_relay;
};

// Merges the "points" events of each job in a batch into one (the latest progress, the union of
// index ranges, summed counts) and keeps every other event; ids stay increasing. What an event
// stream sends per batch, so a fast sweep costs a browser a few messages a second.
std::vector<hub_event> coalesce_points(std::vector<hub_event> events);

}  // namespace kernelscan

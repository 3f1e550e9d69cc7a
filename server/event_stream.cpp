#include "server/event_stream.hpp"

#include <algorithm>
#include <memory>

#include "api/held_out.hpp"

namespace kernelscan {

std::function<bool(std::string&)> event_stream(event_hub& hub, std::uint64_t after, bool stale,
                                               std::atomic<int>& open, bool hide_held_out,
                                               std::function<bool()> hung_up) {
  struct stream_state {
    std::atomic<int>& open;
    std::uint64_t after;
    bool stale;  // the client's Last-Event-ID is not this daemon's
    bool started = false;
    ~stream_state() { open.fetch_sub(1); }
  };
  // Built in place: a temporary's destructor would give the stream's place back.
  auto st = std::make_shared<stream_state>(open, after, stale);
  event_hub* h = &hub;
  return [h, st, hide_held_out, hung_up = std::move(hung_up)](std::string& chunk) {
    if (!st->started) {
      st->started = true;
      chunk = "retry: 2000\n";
      if (st->stale) {
        // The client's state came from a daemon before a restart: it must reload.
        chunk += "id: " + std::to_string(st->after) + "\nevent: reset\ndata: {}\n\n";
      }
      chunk += "event: ready\ndata: {\"last_event_id\":" + std::to_string(st->after) + "}\n\n";
      return true;
    }
    // Waited for in slices, between which a client that closed its side is let go.
    const auto heartbeat = event_hub::clock::now() + k_event_heartbeat;
    auto b = h->wait(st->after, std::min(heartbeat, event_hub::clock::now() + k_event_hangup_check),
                     k_event_linger);
    while (!b.stopping && !b.gap && b.events.empty() && event_hub::clock::now() < heartbeat) {
      if (hung_up && hung_up()) return false;
      b = h->wait(st->after, std::min(heartbeat, event_hub::clock::now() + k_event_hangup_check),
                  k_event_linger);
    }
    if (b.stopping) return false;
    if (b.gap) {
      chunk += "event: reset\ndata: {}\n\n";  // missed events: reload everything
    }
    if (b.events.empty()) {
      chunk += ": keep-alive\n\n";
      return true;
    }
    st->after = b.events.back().id;
    for (const auto& e : coalesce_points(std::move(b.events))) {
      const std::string& data =
          hide_held_out && e.type == "job" ? redacted_job_event(e.data) : e.data;
      chunk += "id: " + std::to_string(e.id) + "\nevent: " + e.type + "\ndata: " + data + "\n\n";
    }
    return true;
  };
}

}  // namespace kernelscan

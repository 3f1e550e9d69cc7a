#pragma once
// Server-Sent Events framing of GET /api/v1/events: the `retry`, `ready` and `reset` lines, a
// keep-alive comment while idle, and the hub's events (bursts of points coalesced) as `id`,
// `event` and `data` lines, produced chunk by chunk for a streamed response.
//
// Threading: a stream is called by the one HTTP thread serving it; many streams read one hub.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "server/event_hub.hpp"

namespace kernelscan {

// An idle event stream sends a comment this often, which also finds clients that went away.
inline constexpr auto k_event_heartbeat = std::chrono::seconds(15);
// ... and asks this often whether its client has closed its side, so that a closed stream gives
// its place back within about this long (the streams a daemon holds at once are few).
inline constexpr auto k_event_hangup_check = std::chrono::milliseconds(500);
// Events are sent in batches at most this often per stream (bursts of points coalesce).
inline constexpr auto k_event_linger = std::chrono::milliseconds(100);

// A stream of the events after `after`; `stale`: the client's Last-Event-ID came from a daemon
// before a restart, so it is told to reset first. `open` counts open streams: the stream has
// taken its place and gives it back when it is destroyed. Each call writes the next chunk and
// returns false once the hub stops, or once `hung_up` says the client has gone.
// `hide_held_out`: "job" events show an evaluation task's job as a candidate sees it
// (held_out.hpp).
std::function<bool(std::string&)> event_stream(event_hub& hub, std::uint64_t after, bool stale,
                                               std::atomic<int>& open, bool hide_held_out,
                                               std::function<bool()> hung_up);

}  // namespace kernelscan

#pragma once
// A device as the API shows it (GET /api/v1/devices): what its worker reported, and its state.
// In a fleet a node keeps its own devices' views and reads the other nodes' from the store,
// where each node writes them with its heartbeat.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/json.hpp"
#include "engine/device_info.hpp"

namespace kernelscan {

// measuring: the worker is measuring the device's roofline (between jobs). offline: its node
// stopped, or has not sent a heartbeat within its lease.
enum class device_state { starting, idle, busy, measuring, restarting, failed, offline };
std::string_view to_string(device_state s);

struct device_view {
  std::string node;
  device_info info;
  device_state state = device_state::starting;
  std::optional<std::int64_t> current_job;
  int worker_pid = 0;
  std::uint64_t worker_restarts = 0;
  std::uint64_t points_measured = 0;
  std::string last_error;
};

// api/openapi.yaml `Device`, without last_heartbeat_at (the caller adds it).
json to_json(const device_view& v);

// The most of a device's last error a "device" event carries (the device itself has it whole).
inline constexpr std::size_t k_device_event_error_bytes = 1024;

// A "device" event of GET /api/v1/events: what of a device changes as it works (its state, its
// job, its worker, its last error, when its roofline was measured), small enough for a fleet's
// notifications. A device's event differs from its last one exactly when one of those changed:
// not for a point measured (each job's "points" events say that).
json device_event(const device_view& v);
// The same of a device as the API shows it (to_json(), or another node's as read from the store).
// Two forms, kept equal by a test: the scheduler makes its devices' events at every point, from
// the view (0.8 µs a device, against 6.2 through to_json() on the development VM); another
// node's device is only JSON.
json device_event(const json& device);

}  // namespace kernelscan

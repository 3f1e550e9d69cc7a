#include "server/device_view.hpp"

#include "api/detail/utf8.hpp"
#include "api/device_codec.hpp"
#include "api/job_codec.hpp"

namespace kernelscan {

std::string_view to_string(device_state s) {
  switch (s) {
    case device_state::starting:
      return "starting";
    case device_state::idle:
      return "idle";
    case device_state::busy:
      return "busy";
    case device_state::measuring:
      return "measuring";
    case device_state::restarting:
      return "restarting";
    case device_state::failed:
      return "failed";
    case device_state::offline:
      return "offline";
  }
  return "?";
}

json to_json(const device_view& v) {
  json j = to_json(v.info);
  j["node"] = v.node;
  j["state"] = to_string(v.state);
  j["current_job"] = v.current_job ? json(*v.current_job) : json(nullptr);
  j["worker_pid"] = v.worker_pid ? json(v.worker_pid) : json(nullptr);
  j["worker_restarts"] = v.worker_restarts;
  j["points_measured"] = v.points_measured;
  j["last_error"] = v.last_error.empty() ? json(nullptr) : json(v.last_error);
  return j;
}

json device_event(const json& device) {
  auto field = [&](const char* key) {
    const auto it = device.find(key);
    return it == device.end() ? json(nullptr) : *it;
  };
  json error = field("last_error");
  if (error.is_string()) {
    error = detail::utf8_prefix(error.get<std::string>(), k_device_event_error_bytes);
  }
  json measured_at = nullptr;
  if (const auto m = device.find("measured"); m != device.end() && m->is_object()) {
    measured_at = m->value("measured_at", json(nullptr));
  }
  return {{"node", field("node")},
          {"index", field("index")},
          {"state", field("state")},
          {"current_job", field("current_job")},
          {"worker_pid", field("worker_pid")},
          {"worker_restarts", field("worker_restarts")},
          {"last_error", std::move(error)},
          {"measured_at", std::move(measured_at)}};
}

json device_event(const device_view& v) {
  json error = nullptr;
  if (!v.last_error.empty()) {
    error = detail::utf8_prefix(v.last_error, k_device_event_error_bytes);
  }
  return {{"node", v.node},
          {"index", v.info.index},
          {"state", to_string(v.state)},
          {"current_job", v.current_job ? json(*v.current_job) : json(nullptr)},
          {"worker_pid", v.worker_pid ? json(v.worker_pid) : json(nullptr)},
          {"worker_restarts", v.worker_restarts},
          {"last_error", std::move(error)},
          {"measured_at",
           v.info.measured ? json(format_time_ms(v.info.measured->measured_ms)) : json(nullptr)}};
}

}  // namespace kernelscan

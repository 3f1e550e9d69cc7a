#include "server/fleet_devices.hpp"

#include "api/job_codec.hpp"
#include "server/fleet_offline.hpp"

namespace kernelscan {

std::vector<json> fleet_devices(job_store& store, const scheduler& sched, double lease_timeout_s,
                                bool shared) {
  std::vector<json> out;
  const auto now = unix_time_ms();
  for (const auto& d : sched.devices()) {
    json j = to_json(d);
    j["last_heartbeat_at"] = format_time_ms(now);
    out.push_back(std::move(j));
  }
  if (!shared) return out;
  for (const auto& d : store.devices(now)) {
    if (d.node != sched.node()) out.push_back(other_node_device(d, now, lease_timeout_s));
  }
  return out;
}

std::string device_text(const json& device, const char* key) {
  const auto it = device.find(key);
  return it != device.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace kernelscan

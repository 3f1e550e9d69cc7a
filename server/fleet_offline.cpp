#include "server/fleet_offline.hpp"

#include "api/job_codec.hpp"
#include "server/device_view.hpp"

namespace kernelscan {

bool node_offline(const device_record& d, double lease_timeout_s) {
  return d.node_stopped || double(d.heartbeat_age_ms) > lease_timeout_s * 1000;
}

json other_node_device(const device_record& d, std::int64_t now_ms, double lease_timeout_s) {
  json j = parse_json(d.info_json);
  if (node_offline(d, lease_timeout_s)) {
    j["state"] = to_string(device_state::offline);
    j["current_job"] = nullptr;
    j["worker_pid"] = nullptr;
  }
  j["last_heartbeat_at"] = format_time_ms(now_ms - d.heartbeat_age_ms);
  return j;
}

std::vector<json> offline_watch::look(const std::vector<device_record>& devices,
                                      const std::string& own_node, std::int64_t now_ms,
                                      double lease_timeout_s) {
  std::vector<json> events;
  for (const auto& d : devices) {
    if (d.node == own_node) continue;
    const bool offline = node_offline(d, lease_timeout_s);
    auto [it, added] = m_offline.try_emplace({d.node, d.index}, offline);
    const bool went = offline && m_looked && (added || !it->second);
    it->second = offline;
    if (!went) continue;
    try {
      events.push_back(device_event(other_node_device(d, now_ms, lease_timeout_s)));
    } catch (const std::exception&) {
      // A description that does not parse: GET /api/v1/devices says so; no event for it.
    }
  }
  m_looked = true;
  return events;
}

}  // namespace kernelscan

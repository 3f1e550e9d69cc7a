#include "server/fleet_relay.hpp"

#include <spdlog/spdlog.h>

#include <charconv>

#include "api/job_codec.hpp"

namespace kernelscan {

std::optional<std::int64_t> fleet_relay::job_id_of(std::string_view job_json) {
  constexpr std::string_view prefix = "{\"id\":";
  if (job_json.substr(0, prefix.size()) != prefix) return std::nullopt;
  job_json.remove_prefix(prefix.size());
  std::int64_t id = 0;
  const auto [end, ec] = std::from_chars(job_json.data(), job_json.data() + job_json.size(), id);
  if (ec != std::errc() || end == job_json.data() || id <= 0) return std::nullopt;
  if (end == job_json.data() + job_json.size() || (*end != ',' && *end != '}')) {
    return std::nullopt;
  }
  return id;
}

store_event fleet_relay::roofline_request(const std::string& node, int index) {
  return {"roofline", json{{"node", node}, {"index", index}}.dump()};
}

void fleet_relay::attach() {
  m_hub.set_relay([this](const std::string& type, const std::string& data) {
    if (type == "job") {
      if (const auto id = job_id_of(data)) {
        m_store.publish_event({"job", "{\"id\":" + std::to_string(*id) + "}"});
      }
    } else {
      m_store.publish_event({type, data});
    }
  });
  m_store.subscribe([this](const store_event& e) { received(e); });
}

void fleet_relay::received(const store_event& e) {
  if (e.type == "name_lost") {  // not an event of the stream
    if (m_on_name_lost) m_on_name_lost(e.data);
    return;
  }
  if (e.type == "roofline") {
    try {
      const json j = parse_json(e.data);
      if (m_on_roofline) m_on_roofline(j.at("node").get<std::string>(), j.at("index").get<int>());
    } catch (const std::exception& ex) {
      spdlog::warn("a roofline request from another node is unreadable ({}): {}", e.data,
                   ex.what());
    }
    return;
  }
  if (e.type != "job") {
    m_hub.publish_local(e.type, e.data);
    return;
  }
  const auto id = job_id_of(e.data);
  if (!id) return;
  try {
    if (auto rec = m_store.get(*id)) {
      m_hub.publish_local("job", job_json_text(*rec));
      if (m_on_job) m_on_job(*rec);
    }
  } catch (const storage_error& ex) {
    spdlog::warn("job {}: another node's event could not be read: {}; event streams reload", *id,
                 ex.what());
    // Dropped silently, a job's end never reached this node's dashboards, and a ?wait= on it
    // held on until its deadline.
    m_hub.publish_local("reset", "{}");
    if (m_on_unread) m_on_unread(*id);
  }
}

}  // namespace kernelscan

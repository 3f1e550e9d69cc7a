#include "server/rooflines.hpp"

#include <spdlog/spdlog.h>

#include "api/device_codec.hpp"
#include "server/result_cache.hpp"

namespace kernelscan {

std::string rooflines::key(const device_info& d) const {
  const std::string device = device_kind(d) + "|" + std::to_string(d.index);
  return m_node.empty() ? device : m_node + "|" + device;
}

std::optional<measured_roofline> rooflines::load(const device_info& d) {
  std::optional<std::string> stored;
  try {
    stored = m_store.roofline(key(d));
  } catch (const storage_error& e) {
    spdlog::warn("device {}: cannot read its stored roofline: {}", d.index, e.what());
    return std::nullopt;
  }
  if (!stored) return std::nullopt;
  try {
    return measured_roofline_from_json(parse_json(*stored));
  } catch (const std::exception& e) {
    spdlog::warn("device {}: stored roofline unreadable ({}); measuring it again", d.index,
                 e.what());
    return std::nullopt;
  }
}

bool rooflines::save(const device_info& d, const measured_roofline& r) {
  try {
    m_store.put_roofline(key(d), to_json(r).dump(), r.measured_ms);
    return true;
  } catch (const storage_error& e) {
    spdlog::error("device {}: cannot store its roofline: {}", d.index, e.what());
    return false;
  }
}

}  // namespace kernelscan

#include "server/result_cache.hpp"

#include <spdlog/spdlog.h>

#include "api/device_codec.hpp"
#include "api/job_spec_codec.hpp"

namespace kernelscan {

std::string device_kind(const device_info& d) {
  return std::string(to_string(d.engine)) + "|" + d.name + "|" + d.arch + "|" + d.driver;
}

std::string cache_key(const job_spec& spec, const device_info& d, std::string_view version) {
  json j = to_json(spec);
  for (const char* k : {"name", "labels", "priority", "device", "engine", "seed", "cache"})
    j.erase(k);
  return j.dump() + "\n" + device_kind(d) + "|" +
         (d.measured ? to_json(d.measured->peaks).dump() : "datasheet") + "\nkernelscan " +
         std::string(version);
}

std::optional<std::int64_t> result_cache::answer(std::int64_t id, const job_spec& spec,
                                                 const device_info& device, bool nothing_measured) {
  try {
    const std::string key = cache_key(spec, device);
    m_store.set_cache_key(id, key);
    if (!spec.cache || !nothing_measured) return std::nullopt;
    const auto hit = m_store.find_cached(key, id);
    if (!hit) return std::nullopt;
    return m_store.copy_cached_results(*hit, id, m_clock.unix_ms());
  } catch (const storage_error& e) {
    spdlog::warn("job {}: result cache unavailable: {}", id, e.what());
    return std::nullopt;
  }
}

}  // namespace kernelscan

#include "server/dispatcher.hpp"

#include <spdlog/spdlog.h>

#include "engine/device_needs.hpp"

namespace kernelscan {

dispatcher::dispatcher(job_store& store, const clock& time, std::string node,
                       std::chrono::milliseconds lease)
    : m_store(store), m_clock(time), m_node(std::move(node)), m_lease(lease) {}

std::optional<claimed_job> dispatcher::next_for(const device_info& device) {
  claim_request r;
  r.node = m_node;
  r.device = device.index;
  r.engine = std::string(to_string(device.engine));
  r.model = device.model;
  r.lacks = device_lacks(device.capabilities);
  r.lease_ms = m_lease.count();
  r.now_ms = m_clock.unix_ms();
  try {
    auto claimed = m_store.claim(r);
    if (m_failing) spdlog::info("dispatch: the store answers again");
    m_failing = false;
    return claimed;
  } catch (const storage_error& e) {
    if (!m_failing) spdlog::error("dispatch: cannot claim jobs: {}", e.what());
    m_failing = true;
    return std::nullopt;
  }
}

}  // namespace kernelscan

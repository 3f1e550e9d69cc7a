#include "server/node_heartbeat.hpp"

#include <spdlog/spdlog.h>

namespace kernelscan {

node_heartbeat::node_heartbeat(job_store& store, const clock& time, std::string node,
                               std::chrono::milliseconds lease)
    : m_store(store), m_clock(time), m_node(std::move(node)), m_lease(lease), m_due(time.now()) {}

node_heartbeat::outcome node_heartbeat::beat(std::span<const device_record> devices,
                                             std::span<const job_lease> held) {
  outcome out;
  const auto now_ms = m_clock.unix_ms();
  try {
    m_store.heartbeat(m_node, devices, now_ms);
    out.renewal = m_store.renew_leases(m_node, held, m_lease.count(), now_ms);
    out.expired = m_store.expire_leases(now_ms);
    out.stored = true;
  } catch (const storage_error& e) {
    if (!m_failing) {
      spdlog::error(
          "heartbeat: the store cannot be reached ({}); jobs keep running, and their "
          "leases last {} ms from the last renewal",
          e.what(), m_lease.count());
    }
    m_failing = true;
    m_due = m_clock.now() + std::chrono::seconds(1);
    return out;
  }
  if (m_failing) spdlog::info("heartbeat: the store answers again");
  m_failing = false;
  m_due = m_clock.now() + std::max(std::chrono::milliseconds(50), m_lease / 4);
  return out;
}

}  // namespace kernelscan

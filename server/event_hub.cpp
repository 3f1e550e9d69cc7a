#include "server/event_hub.hpp"

#include <algorithm>
#include <unordered_map>

#include "api/json.hpp"

namespace kernelscan {

void event_hub::publish(std::string type, std::string data) {
  if (m_relay) m_relay(type, data);
  publish_local(std::move(type), std::move(data));
}

void event_hub::publish_local(std::string type, std::string data) {
  {
    std::lock_guard lock(m_mutex);
    m_ring.push_back({++m_last_id, std::move(type), std::move(data)});
    while (m_ring.size() > m_capacity)
      m_ring.pop_front();
  }
  m_cv.notify_all();
}

event_hub::batch event_hub::collect(std::uint64_t after) const {
  batch out;
  out.stopping = m_stopping;
  if (after >= m_last_id) return out;
  // Ids are contiguous in the ring: the first newer one is at a known offset.
  const std::uint64_t first = m_ring.empty() ? m_last_id + 1 : m_ring.front().id;
  out.gap = after + 1 < first;
  const std::size_t from = after + 1 <= first ? 0 : std::size_t(after + 1 - first);
  out.events.assign(m_ring.begin() + std::ptrdiff_t(from), m_ring.end());
  return out;
}

event_hub::batch event_hub::wait(std::uint64_t after, clock::time_point deadline,
                                 clock::duration linger) {
  std::unique_lock lock(m_mutex);
  m_cv.wait_until(lock, deadline, [&] { return m_stopping || m_last_id > after; });
  if (!m_stopping && m_last_id > after && linger > clock::duration::zero()) {
    m_cv.wait_for(lock, linger, [&] { return m_stopping; });
  }
  return collect(after);
}

std::uint64_t event_hub::last_id() const {
  std::lock_guard lock(m_mutex);
  return m_last_id;
}

bool event_hub::issued(std::uint64_t id) const {
  return id >= m_first_id && id <= last_id();
}

void event_hub::shutdown() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
  }
  m_cv.notify_all();
}

std::vector<hub_event> coalesce_points(std::vector<hub_event> events) {
  std::vector<hub_event> out;
  out.reserve(events.size());
  // job id -> (position in `out`, merged data)
  std::unordered_map<std::int64_t, std::pair<std::size_t, json>> merged;
  for (auto& e : events) {
    if (e.type != "points") {
      out.push_back(std::move(e));
      continue;
    }
    json d = json::parse(e.data, nullptr, false);
    if (d.is_discarded() || !d.contains("job_id")) {
      out.push_back(std::move(e));
      continue;
    }
    const auto job = d["job_id"].get<std::int64_t>();
    auto it = merged.find(job);
    if (it == merged.end()) {
      merged.emplace(job, std::make_pair(out.size(), std::move(d)));
      out.push_back(std::move(e));
      continue;
    }
    auto& [pos, acc] = it->second;
    acc["first_index"] =
        std::min(acc["first_index"].get<std::uint64_t>(), d["first_index"].get<std::uint64_t>());
    acc["last_index"] =
        std::max(acc["last_index"].get<std::uint64_t>(), d["last_index"].get<std::uint64_t>());
    acc["stored"] = acc["stored"].get<std::uint64_t>() + d["stored"].get<std::uint64_t>();
    acc["failed"] = acc["failed"].get<std::uint64_t>() + d["failed"].get<std::uint64_t>();
    acc["done"] = d["done"];
    acc["total"] = d["total"];
    out[pos].id = e.id;  // the merged event is as new as its newest part (for Last-Event-ID)
    out[pos].data = acc.dump();
  }
  // The merged events carry their newest ids; keep the stream's ids increasing.
  std::stable_sort(out.begin(), out.end(),
                   [](const hub_event& a, const hub_event& b) { return a.id < b.id; });
  return out;
}

}  // namespace kernelscan

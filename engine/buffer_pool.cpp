#include "engine/buffer_pool.hpp"

#include <algorithm>

namespace kernelscan {

std::optional<buffer_pool::allocation> buffer_pool::take(std::uint64_t bytes, std::uint64_t guard) {
  const auto it = std::find_if(m_kept.rbegin(), m_kept.rend(), [&](const kept& k) {
    return k.a.bytes == bytes && k.a.guard == guard;
  });
  if (it == m_kept.rend()) return std::nullopt;
  const allocation a = it->a;
  m_bytes -= a.whole;
  m_kept.erase(std::next(it).base());
  return a;
}

std::vector<buffer_pool::allocation> buffer_pool::keep(const allocation& a) {
  std::vector<allocation> out;
  if (a.whole > m_capacity) {
    out.push_back(a);
    return out;
  }
  while (!m_kept.empty() && m_bytes + a.whole > m_capacity) {
    out.push_back(m_kept.front().a);
    m_bytes -= m_kept.front().a.whole;
    m_kept.pop_front();
  }
  m_kept.push_back({a, m_point});
  m_bytes += a.whole;
  return out;
}

std::vector<buffer_pool::allocation> buffer_pool::begin_point() {
  ++m_point;
  std::vector<allocation> out;
  // Kept during the point before the previous one, or earlier: the previous point did not need
  // it, so this one is unlikely to.
  while (!m_kept.empty() && m_kept.front().point + 2 <= m_point) {
    out.push_back(m_kept.front().a);
    m_bytes -= m_kept.front().a.whole;
    m_kept.pop_front();
  }
  return out;
}

std::vector<buffer_pool::allocation> buffer_pool::drain() {
  std::vector<allocation> out;
  out.reserve(m_kept.size());
  for (const auto& k : m_kept)
    out.push_back(k.a);
  m_kept.clear();
  m_bytes = 0;
  return out;
}

}  // namespace kernelscan

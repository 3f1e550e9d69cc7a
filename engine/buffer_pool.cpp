#include "engine/buffer_pool.hpp"

#include <algorithm>
#include <new>

namespace kernelscan {

void buffer_pool::set_capacity(std::uint64_t capacity) noexcept {
  m_capacity = capacity;
  while (m_bytes > m_capacity)
    free_oldest();
}

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

void buffer_pool::keep(const allocation& a) noexcept {
  if (a.whole > m_capacity) return m_free(a);
  while (!m_kept.empty() && m_bytes + a.whole > m_capacity)
    free_oldest();
  try {
    m_kept.push_back({a, m_point});
  } catch (const std::bad_alloc&) {
    return m_free(a);
  }
  m_bytes += a.whole;
}

void buffer_pool::begin_point() noexcept {
  ++m_point;
  // Kept during the point before the previous one, or earlier: the previous point did not need
  // it, so this one is unlikely to.
  while (!m_kept.empty() && m_kept.front().point + 2 <= m_point)
    free_oldest();
}

void buffer_pool::clear() noexcept {
  while (!m_kept.empty())
    free_oldest();
}

void buffer_pool::free_oldest() noexcept {
  const allocation a = m_kept.front().a;
  m_kept.pop_front();
  m_bytes -= a.whole;
  m_free(a);
}

}  // namespace kernelscan

#include "engine/host_blocks.hpp"

#include "engine/buffer_pool.hpp"

namespace kernelscan {
namespace {

constexpr std::size_t k_min_kept = std::size_t(1) << 20;
constexpr std::uint64_t k_max_kept = std::uint64_t(1) << 30;

thread_local host_block_cache* t_cache = nullptr;

void free_block(const buffer_pool::allocation& a) noexcept {
  ::operator delete(reinterpret_cast<void*>(a.handle));
}

}  // namespace

// A block is an allocation of `bytes` with no guard, its handle the pointer.
struct host_block_cache::state {
  buffer_pool pool{k_max_kept, free_block};
};

struct host_block_access {
  static buffer_pool& pool(host_block_cache& c) { return c.m_state->pool; }
};

host_block_cache::host_block_cache() : m_state(std::make_unique<state>()) {}

host_block_cache::~host_block_cache() {
  m_state->pool.clear();
}

void host_block_cache::begin_point() {
  m_state->pool.begin_point();
}

std::uint64_t host_block_cache::kept_bytes() const {
  return m_state->pool.bytes();
}

host_block_cache::use::use(host_block_cache& cache) : m_previous(t_cache) {
  t_cache = &cache;
}

host_block_cache::use::~use() {
  t_cache = m_previous;
}

namespace host_blocks {

void* allocate(std::size_t bytes) {
  if (t_cache && bytes >= k_min_kept) {
    if (const auto a = host_block_access::pool(*t_cache).take(bytes, 0)) {
      return reinterpret_cast<void*>(a->handle);
    }
  }
  return ::operator new(bytes);
}

void release(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  if (!t_cache || bytes < k_min_kept) return ::operator delete(p);
  const auto handle = reinterpret_cast<std::uintptr_t>(p);
  host_block_access::pool(*t_cache).keep({handle, handle, bytes, 0, bytes});
}

}  // namespace host_blocks
}  // namespace kernelscan

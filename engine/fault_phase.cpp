#include "engine/fault_phase.hpp"

#include <atomic>

namespace kernelscan {
namespace {

std::atomic<const char*> g_phase{nullptr};
static_assert(std::atomic<const char*>::is_always_lock_free, "read from a signal handler");

}  // namespace

fault_phase::fault_phase(const char* what) noexcept
    : m_outer(g_phase.exchange(what, std::memory_order_relaxed)) {}

fault_phase::~fault_phase() {
  g_phase.store(m_outer, std::memory_order_relaxed);
}

const char* fault_phase::current() noexcept {
  return g_phase.load(std::memory_order_relaxed);
}

}  // namespace kernelscan

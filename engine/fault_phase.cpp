#include "engine/fault_phase.hpp"

#include <algorithm>
#include <cstring>

namespace kernelscan {
namespace {

std::atomic<const char*> g_phase{nullptr};
fault_phase_page* g_page = nullptr;

// A torn write (the process died inside it) leaves size 0: no phase rather than a mixed one.
void publish(const char* what) noexcept {
  if (!g_page) return;
  g_page->size.store(0, std::memory_order_relaxed);
  g_page->samples.store(0, std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  const std::size_t n = what ? std::min(std::strlen(what), fault_phase_page::k_text_bytes) : 0;
  std::memcpy(g_page->text, what ? what : "", n);
  g_page->size.store(static_cast<std::uint32_t>(n), std::memory_order_release);
}

}  // namespace

fault_phase::fault_phase(const char* what) noexcept
    : m_outer(g_phase.exchange(what, std::memory_order_relaxed)) {
  publish(what);
}

fault_phase::~fault_phase() {
  g_phase.store(m_outer, std::memory_order_relaxed);
  publish(m_outer);
}

const char* fault_phase::current() noexcept {
  return g_phase.load(std::memory_order_relaxed);
}

void fault_phase::publish_to(fault_phase_page* page) noexcept {
  g_page = page;
  publish(current());
}

void fault_phase::count_sample() noexcept {
  if (!g_page) return;
  // One writer, the measuring thread: a load and a store, no read-modify-write on the bus.
  g_page->samples.store(g_page->samples.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
}

std::string fault_phase::read(const fault_phase_page& page) {
  const std::size_t n = std::min<std::size_t>(page.size.load(std::memory_order_acquire),
                                              fault_phase_page::k_text_bytes);
  std::string text(page.text, n);
  for (char& c : text) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  const std::uint64_t samples = page.samples.load(std::memory_order_relaxed);
  if (!text.empty() && samples > 0) {
    text +=
        " (after " + std::to_string(samples) + " timed sample" + (samples == 1 ? "" : "s") + ")";
  }
  return text;
}

}  // namespace kernelscan

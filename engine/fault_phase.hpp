#pragma once
// What a worker is doing with a user's code, named for the daemon when that code takes the
// worker's process down. On a CPU device (PoCL) a kernel runs in the worker's own process, so one
// that writes far out of its buffers, overflows a stack (its own, or one of the runtime's
// threads') or holds more program-scope data than the device can place ends the worker with a
// signal, and all the daemon would otherwise know is the signal; a point that outlives its
// watchdog is killed without a word too. A phase is set on the measuring thread around each step
// of a point and written, as it opens and as it closes, into a page the daemon shares with the
// worker: the daemon reads the last one after the worker ended, however it ended.
//
// Threading: scopes open and close on one thread. The page is read by another process once the
// writer is dead; what it holds is written by a process running untrusted code, so the reader
// bounds and cleans it.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace kernelscan {

// The shared page's layout (a memfd both processes map).
struct fault_phase_page {
  static constexpr std::size_t k_text_bytes = 240;
  std::atomic<std::uint32_t> size;  // bytes of text; 0: no phase (or one being written)
  char text[k_text_bytes];
  std::atomic<std::uint64_t> samples;  // timed samples taken since the phase opened
};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "shared between processes");
static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "shared between processes");

class fault_phase {
 public:
  // `what`: a string literal ("the kernel's timed launches"); the phase until this scope ends,
  // when the enclosing one's is again.
  explicit fault_phase(const char* what) noexcept;
  ~fault_phase();
  fault_phase(const fault_phase&) = delete;
  fault_phase& operator=(const fault_phase&) = delete;

  // The innermost open phase, or nullptr outside every one.
  static const char* current() noexcept;
  // Where phases are written from now on (nullptr: nowhere): the worker's shared page.
  static void publish_to(fault_phase_page* page) noexcept;
  // One more timed sample taken in the current phase (a kernel that hangs at its 38th launch
  // is told how far it got: an intermittent hang, a race, reads differently from one at the
  // first). Every phase opened or closed starts the count again.
  static void count_sample() noexcept;
  // The phase `page` holds, as printable ASCII of at most k_text_bytes, and where samples were
  // taken in it, " (after N timed samples)" ("" for no phase).
  static std::string read(const fault_phase_page& page);

 private:
  const char* m_outer;
};

}  // namespace kernelscan

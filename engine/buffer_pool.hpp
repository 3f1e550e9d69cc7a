#pragma once
// Device allocations a backend keeps after their buffers are released, to hand out again for
// the next allocation of the same size. A fresh allocation costs far more than a reused one: on
// a CPU device (PoCL) every page of it is faulted in and zeroed on its first touch, about 100 ms
// for the 48 MiB of an axpy's second buffer set on a 2-core VM, and on a GPU hipMalloc and
// hipFree synchronise the device. Consecutive points allocate the same sizes (the variants of a
// point, repeated points, every candidate evaluated against one task), so each point after the
// first finds its buffers here.
//
// What a kept allocation holds is what its last user left there: whoever takes it must write
// every byte a kernel may read before a kernel runs (the point runner fills every buffer, and
// writes the canaries of guarded ones, before any launch).
//
// Bounds: at most `capacity` bytes are kept (the oldest allocations go first), and what no
// point has taken since before the previous point began is returned by begin_point() to be
// freed, so a sweep over growing sizes does not hold the sizes it has left behind. The pool
// frees nothing itself: it hands back the allocations its owner must free. Not thread-safe
// (one per backend, used by the worker's thread).

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace kernelscan {

class buffer_pool {
 public:
  // One device allocation as a backend made it (device_buffer's fields, and the bytes it holds
  // on the device, guards and alignment included).
  struct allocation {
    std::uintptr_t handle = 0;
    std::uintptr_t base = 0;
    std::uint64_t bytes = 0;
    std::uint64_t guard = 0;
    std::uint64_t whole = 0;
  };

  explicit buffer_pool(std::uint64_t capacity) : m_capacity(capacity) {}

  // A kept allocation of exactly `bytes` with `guard`, taken out of the pool (the one kept
  // last), or nothing.
  std::optional<allocation> take(std::uint64_t bytes, std::uint64_t guard);
  // Keeps `a`. Returns what must be freed now: the oldest kept allocations beyond the capacity,
  // or `a` itself where it alone exceeds it.
  std::vector<allocation> keep(const allocation& a);
  // A point begins: returns the allocations kept before the previous point began and not taken
  // since, to be freed.
  std::vector<allocation> begin_point();
  // Returns everything kept, to be freed (the device needs the room, or the backend closes).
  std::vector<allocation> drain();

  // Device bytes held by the kept allocations.
  std::uint64_t bytes() const { return m_bytes; }
  bool empty() const { return m_kept.empty(); }

 private:
  struct kept {
    allocation a;
    std::uint64_t point = 0;  // the point during which (or after which) it was kept
  };
  std::deque<kept> m_kept;  // oldest first
  std::uint64_t m_capacity = 0;
  std::uint64_t m_bytes = 0;
  std::uint64_t m_point = 0;
};

}  // namespace kernelscan

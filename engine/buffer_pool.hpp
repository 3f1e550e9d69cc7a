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
// frees through the function its owner gives it; it frees nothing in its destructor (a backend
// must clear() it while its context still lives). Not thread-safe (one per backend, used by the
// worker's thread).

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>

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

  // Frees one allocation on the device (or the host); never throws.
  using free_function = std::function<void(const allocation&)>;

  buffer_pool(std::uint64_t capacity, free_function free)
      : m_free(std::move(free)), m_capacity(capacity) {}

  // Keeps at most `capacity` bytes from now on, freeing the oldest allocations beyond it.
  void set_capacity(std::uint64_t capacity) noexcept;
  // A kept allocation of exactly `bytes` with `guard`, taken out of the pool (the one kept
  // last), or nothing.
  std::optional<allocation> take(std::uint64_t bytes, std::uint64_t guard);
  // Keeps `a`, freeing the oldest kept allocations beyond the capacity; frees `a` itself where
  // it alone exceeds the capacity, or where the host has no memory to note it.
  void keep(const allocation& a) noexcept;
  // A point begins: frees the allocations kept before the previous point began and not taken
  // since.
  void begin_point() noexcept;
  // Frees everything kept (the device needs the room, or the backend closes).
  void clear() noexcept;

  // Device bytes held by the kept allocations.
  std::uint64_t bytes() const { return m_bytes; }
  bool empty() const { return m_kept.empty(); }

 private:
  struct kept {
    allocation a;
    std::uint64_t point = 0;  // the point during which (or after which) it was kept
  };
  // Frees the oldest kept allocation.
  void free_oldest() noexcept;

  free_function m_free;
  std::deque<kept> m_kept;  // oldest first
  std::uint64_t m_capacity = 0;
  std::uint64_t m_bytes = 0;
  std::uint64_t m_point = 0;
};

}  // namespace kernelscan

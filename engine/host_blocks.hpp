#pragma once
// Large host blocks recycled by their owner: the reference's answers a point runner keeps on the
// host (an output's size each, three per point and more) are freed at the end of a point and
// needed again, of the same sizes, by the next. Fresh memory of that size comes from the kernel
// as untouched pages, each faulted in and zeroed on its first write: about 30 ms for 16 MiB on a
// 2-core VM, more than comparing it. A block of 1 MiB or more freed while a cache is in use on
// the thread (host_block_cache::use) is kept there (up to 1 GiB; what no point has taken since
// before the previous point began goes back at the next begin_point()), and handed out again
// for a request of exactly its size. Without a cache in use, blocks are plain new and delete.
//
// host_bytes is a byte vector on such blocks whose resize() leaves new bytes uninitialised
// (every user overwrites them: a read from the device fills it).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace kernelscan {

class host_block_cache {
 public:
  host_block_cache();
  ~host_block_cache();
  host_block_cache(const host_block_cache&) = delete;
  host_block_cache& operator=(const host_block_cache&) = delete;

  // A point begins: blocks not taken since before the previous one are freed.
  void begin_point();
  // Bytes kept.
  std::uint64_t kept_bytes() const;

  // While it lives, blocks on this thread come from and go back to `cache`.
  class use {
   public:
    explicit use(host_block_cache& cache);
    ~use();
    use(const use&) = delete;
    use& operator=(const use&) = delete;

   private:
    host_block_cache* m_previous;
  };

 private:
  friend struct host_block_access;
  struct state;
  std::unique_ptr<state> m_state;
};

namespace host_blocks {
// A block of `bytes`: one the thread's cache in use keeps where it has one of that size, new
// otherwise (throws std::bad_alloc).
void* allocate(std::size_t bytes);
// Keeps a block from allocate() in the thread's cache in use, or frees it.
void release(void* p, std::size_t bytes) noexcept;
}  // namespace host_blocks

template <typename T>
struct recycled_allocator {
  using value_type = T;
  recycled_allocator() = default;
  template <typename U>
  recycled_allocator(const recycled_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(host_blocks::allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { host_blocks::release(p, n * sizeof(T)); }
  // Default-initialised: resize() does not write what is about to be overwritten.
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <typename U>
  bool operator==(const recycled_allocator<U>&) const noexcept {
    return true;
  }
};

using host_bytes = std::vector<unsigned char, recycled_allocator<unsigned char>>;

}  // namespace kernelscan

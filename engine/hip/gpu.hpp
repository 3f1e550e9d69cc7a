#pragma once
// Error handling and owners for the GPU runtime's objects, shared by the HIP engine's files.
// Compiled by hipcc or nvcc only (it includes the runtime).
//
// Every runtime call goes through check(), which throws gpu_error (a backend_error) naming the
// call.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/device_backend.hpp"
#include "engine/dtype.hpp"
#include "engine/hip/gpu_errors.hpp"
#include "engine/hip/runtime.hpp"

namespace kernelscan::gpu {

// The kind of a runtime error, as the runner reports it (gpu_errors.hpp). An error that leaves
// the context unusable is device_lost: the engine then fails the point as a device fault and
// its worker is replaced.
inline fault_kind fault_of(hipError_t code) {
  return classify_gpu_error(static_cast<int>(code));
}

// Set once the process has seen an error that leaves the context unusable.
inline bool g_context_lost = false;

class gpu_error : public backend_error {
 public:
  gpu_error(hipError_t code, const std::string& what)
      : backend_error(fault_of(code), what + ": " + hipGetErrorName(code) + " (" +
                                          hipGetErrorString(code) + ")" +
                                          hint(static_cast<int>(code))),
        m_code(code) {
    if (kind() == fault_kind::device_lost) g_context_lost = true;
  }
  hipError_t code() const { return m_code; }
  bool out_of_memory() const { return kind() == fault_kind::out_of_memory; }
  bool sticky() const { return kind() == fault_kind::device_lost; }

 private:
  static std::string hint(int code) {
    const std::string h = gpu_error_hint(code);
    return h.empty() ? "" : "; " + h;
  }
  hipError_t m_code;
};

inline void check(hipError_t e, const char* what) {
  if (e != hipSuccess) throw gpu_error(e, what);
}

// Memory that `Kind` allocates and frees, as bytes; moves, never copies.
template <class Kind>
class owned_memory {
 public:
  owned_memory() = default;
  explicit owned_memory(std::uint64_t bytes) : m_bytes(bytes) {
    if (bytes) Kind::allocate(&m_ptr, bytes);
  }
  owned_memory(owned_memory&& o) noexcept
      : m_ptr(std::exchange(o.m_ptr, nullptr)), m_bytes(std::exchange(o.m_bytes, 0)) {}
  owned_memory& operator=(owned_memory&& o) noexcept {
    std::swap(m_ptr, o.m_ptr);
    std::swap(m_bytes, o.m_bytes);
    return *this;
  }
  owned_memory(const owned_memory&) = delete;
  owned_memory& operator=(const owned_memory&) = delete;
  ~owned_memory() {
    if (m_ptr) Kind::release(m_ptr);
  }
  void* get() const { return m_ptr; }
  unsigned char* data() const { return static_cast<unsigned char*>(m_ptr); }
  std::uint64_t bytes() const { return m_bytes; }

 private:
  void* m_ptr = nullptr;
  std::uint64_t m_bytes = 0;
};

struct device_memory {
  static void allocate(void** p, std::uint64_t bytes) { check(hipMalloc(p, bytes), "hipMalloc"); }
  static void release(void* p) { (void)hipFree(p); }
};

// Page-locked host memory: copies to and from it are queued on a stream without a wait.
struct page_locked_memory {
  static void allocate(void** p, std::uint64_t bytes) {
    check(hipHostMalloc(p, bytes, hipHostMallocDefault), "hipHostMalloc");
  }
  static void release(void* p) { (void)hipHostFree(p); }
};

using buffer = owned_memory<device_memory>;
using pinned = owned_memory<page_locked_memory>;

class event {
 public:
  event() { check(hipEventCreate(&m_event), "hipEventCreate"); }
  event(const event&) = delete;
  event& operator=(const event&) = delete;
  ~event() { (void)hipEventDestroy(m_event); }
  hipEvent_t get() const { return m_event; }

 private:
  hipEvent_t m_event{};
};

class stream {
 public:
  stream() { check(hipStreamCreateWithFlags(&m_stream, hipStreamNonBlocking), "hipStreamCreate"); }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
  ~stream() { (void)hipStreamDestroy(m_stream); }
  hipStream_t get() const { return m_stream; }

 private:
  hipStream_t m_stream{};
};

// Host memory the device reads while kernels run (the blocking kernel's release flag).
class mapped_flag {
 public:
  mapped_flag() {
    check(hipHostMalloc(reinterpret_cast<void**>(&m_host), 2 * sizeof(int), hipHostMallocMapped),
          "hipHostMalloc");
    m_host[0] = m_host[1] = 0;
    check(hipHostGetDevicePointer(reinterpret_cast<void**>(&m_device), m_host, 0),
          "hipHostGetDevicePointer");
  }
  mapped_flag(const mapped_flag&) = delete;
  mapped_flag& operator=(const mapped_flag&) = delete;
  ~mapped_flag() { (void)hipHostFree(m_host); }
  // [0]: the release flag the host sets; [1]: set by the kernel when it gave up waiting.
  volatile int* host() const { return m_host; }
  int* device() const { return m_device; }

 private:
  int* m_host = nullptr;
  int* m_device = nullptr;
};

// Calls f(T{}) with T the element type of `t` on the device.
template <typename F>
decltype(auto) with_type(dtype t, F&& f) {
  switch (t) {
    case dtype::f64:
      return f(double{});
    case dtype::f32:
      return f(float{});
    case dtype::f16:
      return f(gpu_f16{});
    case dtype::bf16:
      return f(gpu_bf16{});
    case dtype::i64:
      return f(std::int64_t{});
    case dtype::i32:
      return f(std::int32_t{});
    case dtype::u32:
      return f(std::uint32_t{});
    case dtype::i8:
      return f(std::int8_t{});
    case dtype::u8:
      return f(std::uint8_t{});
  }
  throw std::invalid_argument("unknown dtype");
}

}  // namespace kernelscan::gpu

// The HIP engine's own kernels (kernels.hpp). Written once for hipcc and nvcc: only the names of
// runtime.hpp, and the clock read of the blocking kernel, differ between platforms.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>

#include "engine/element.hpp"
#include "engine/fill_pattern.hpp"
#include "engine/gemm_layout.hpp"
#include "engine/hip/kernels.hpp"
#include "engine/output_check.hpp"

namespace kernelscan::gpu {
namespace {

constexpr int k_block = 256;
constexpr std::int64_t k_max_grid = 8192;  // grid-stride loops cover the rest

unsigned grid_for(std::int64_t n) {
  return unsigned(std::clamp<std::int64_t>((n + k_block - 1) / k_block, 1, k_max_grid));
}

template <typename T>
constexpr bool is_half_v = std::is_same_v<T, gpu_f16> || std::is_same_v<T, gpu_bf16>;

// Arithmetic type of a kernel on T: f64 for 32- and 64-bit types other than f32, f32 otherwise.
template <typename T>
using acc_t = std::conditional_t<(sizeof(T) >= 4 && !std::is_same_v<T, float>), double, float>;

template <typename A, typename T>
__device__ inline A to_acc(T x) {
  if constexpr (is_half_v<T>) {
    return A(to_float(x));
  } else {
    return A(x);
  }
}

template <typename T, typename A>
__device__ inline T from_acc(A x) {
  if constexpr (is_half_v<T>) {
    return from_float<T>(float(x));
  } else {
    return T(x);
  }
}

__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename T>
__device__ inline void fill_random_run(T* p, std::int64_t n, std::uint64_t seed) {
  const std::uint64_t f = mix64(seed ^ k_fill_segment_salt);
  const unsigned segment_bits = unsigned(6 + f % 7);
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::uint64_t r = mix64(seed ^ mix64(std::uint64_t(i)));
    if constexpr (std::is_floating_point_v<T> || is_half_v<T>) {
      const std::uint64_t g = mix64(f ^ (std::uint64_t(i) >> segment_bits));
      const float h = float(unsigned(g % 3)) * 0.5f;
      const float s = (g >> 8) & 1 ? 0.5f : 1.0f;
      const float u = float(r >> 40) * (1.0f / 16777216.0f);  // [0, 1)
      p[i] = from_acc<T>(s * (u - h));
    } else if constexpr (std::is_signed_v<T>) {
      p[i] = T(std::int64_t(r >> 60) - 8);
    } else {
      p[i] = T(r >> 60);
    }
  }
}

template <typename T>
__global__ void fill_random_kernel(T* p, std::int64_t n, std::uint64_t seed) {
  fill_random_run(p, n, seed);
}

// Buffer blockIdx.y of the sets.
template <typename T>
__global__ void fill_random_sets_kernel(fill_sets sets, std::int64_t n) {
  fill_random_run(static_cast<T*>(sets.p[blockIdx.y]), n, sets.seed[blockIdx.y]);
}

__global__ void fill_words_sets_kernel(fill_sets sets, std::int64_t n, std::uint64_t word) {
  auto* p = static_cast<std::uint64_t*>(sets.p[blockIdx.y]);
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    p[i] = word;
  }
}

template <typename T>
__global__ void fill_value_kernel(T* p, std::int64_t n, double value) {
  const T v = from_acc<T>(acc_t<T>(value));
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    p[i] = v;
  }
}

template <typename T>
__global__ void fill_arange_kernel(T* p, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    p[i] = from_acc<T>(acc_t<T>(i));
  }
}

// One value in every element: the unwritten pattern, whose bits the host gives (element.hpp).
template <typename T>
__global__ void fill_bits_kernel(T* p, std::int64_t n, T v) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    p[i] = v;
  }
}

// One element of a STREAM variant: copy c = a; scale b = s·c; add c = a + b; triad a = b + s·c.
// `x` is the first input (a for copy and add, c for scale and triad), `y` the second (b).
template <int Variant, typename T, typename A>
__device__ inline T stream_element(T x, T y, A s) {
  if constexpr (Variant == 0) {
    return x;
  } else if constexpr (Variant == 1) {
    return from_acc<T>(A(s * to_acc<A>(x)));
  } else if constexpr (Variant == 2) {
    return from_acc<T>(A(to_acc<A>(x) + to_acc<A>(y)));
  } else {
    return from_acc<T>(A(to_acc<A>(y) + s * to_acc<A>(x)));
  }
}

// The variant's first input and its output among a, b, c.
template <int Variant, typename T>
__device__ inline T* stream_input(T* a, T* c) {
  return Variant == 0 || Variant == 2 ? a : c;
}
template <int Variant, typename T>
__device__ inline T* stream_output(T* a, T* b, T* c) {
  return Variant == 0 || Variant == 2 ? c : Variant == 1 ? b : a;
}

// For buffers not aligned to 16 bytes: one element per thread and iteration, grid-stride.
template <int Variant, typename T>
__global__ void stream_kernel(std::int64_t n, double scalar, T* a, T* b, T* c) {
  using A = acc_t<T>;
  const A s = A(scalar);
  T* x = stream_input<Variant>(a, c);
  T* out = stream_output<Variant>(a, b, c);
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    out[i] = stream_element<Variant>(x[i], Variant >= 2 ? b[i] : x[i], s);
  }
}

// STREAM at the memory's speed, for buffers aligned to 16 bytes: 16-byte loads and stores, each
// thread with k_stream_unroll of them in flight before its first store (the scalar grid-stride
// loop reached 77% of an H200's bandwidth, PyTorch's vectorised kernel 89%). Block b
// covers vectors [b·k_block·unroll, (b+1)·k_block·unroll), consecutive threads on consecutive
// vectors; the last n mod (16/sizeof(T)) elements go to block 0's first threads.
constexpr int k_stream_unroll = 4;

template <typename T>
struct alignas(16) vector16 {
  T e[16 / sizeof(T)];
};

template <int Variant, typename T>
__global__ void __launch_bounds__(k_block)
    stream_vector_kernel(std::int64_t n, double scalar, T* a, T* b, T* c) {
  using A = acc_t<T>;
  using V = vector16<T>;
  constexpr int width = 16 / sizeof(T);
  const A s = A(scalar);
  T* x = stream_input<Variant>(a, c);
  T* out = stream_output<Variant>(a, b, c);
  const std::int64_t vectors = n / width;
  const std::int64_t first = blockIdx.x * std::int64_t(k_block) * k_stream_unroll + threadIdx.x;
  V vx[k_stream_unroll], vy[k_stream_unroll];
#pragma unroll
  for (int u = 0; u < k_stream_unroll; ++u) {
    const std::int64_t v = first + std::int64_t(u) * k_block;
    if (v < vectors) {
      vx[u] = reinterpret_cast<const V*>(x)[v];
      if constexpr (Variant >= 2) vy[u] = reinterpret_cast<const V*>(b)[v];
    }
  }
#pragma unroll
  for (int u = 0; u < k_stream_unroll; ++u) {
    const std::int64_t v = first + std::int64_t(u) * k_block;
    if (v < vectors) {
      V r;
#pragma unroll
      for (int e = 0; e < width; ++e)
        r.e[e] = stream_element<Variant>(vx[u].e[e], Variant >= 2 ? vy[u].e[e] : vx[u].e[e], s);
      reinterpret_cast<V*>(out)[v] = r;
    }
  }
  const std::int64_t tail = vectors * width + threadIdx.x;
  if (blockIdx.x == 0 && tail < n) {
    out[tail] = stream_element<Variant>(x[tail], Variant >= 2 ? b[tail] : x[tail], s);
  }
}

template <typename T>
__global__ void stream_reference_kernel(int variant, std::int64_t n, double s, T* a, T* b, T* c) {
  const std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  if (variant == 0) c[i] = from_acc<T>(to_acc<double>(a[i]));
  if (variant == 1) b[i] = from_acc<T>(s * to_acc<double>(c[i]));
  if (variant == 2) c[i] = from_acc<T>(to_acc<double>(a[i]) + to_acc<double>(b[i]));
  if (variant == 3) a[i] = from_acc<T>(to_acc<double>(b[i]) + s * to_acc<double>(c[i]));
}

// A(i, p) = a[i*sai + p*sap]; B(p, j) = b[p*sbp + j*sbj] (strides_of, gemm_layout.hpp); C
// row-major.
constexpr int k_tile = 64;
constexpr int k_tile_k = 16;

template <typename T, typename A>
__global__ void __launch_bounds__(256)
    gemm_tiled_kernel(std::int64_t m, std::int64_t n, std::int64_t k, const T* a, std::int64_t sai,
                      std::int64_t sap, const T* b, std::int64_t sbp, std::int64_t sbj, T* c,
                      A alpha, A beta) {
  __shared__ A as[k_tile_k][k_tile + 1];
  __shared__ A bs[k_tile_k][k_tile + 1];
  const int tx = int(threadIdx.x) % 16;
  const int ty = int(threadIdx.x) / 16;
  const std::int64_t row0 = std::int64_t(blockIdx.y) * k_tile;
  const std::int64_t col0 = std::int64_t(blockIdx.x) * k_tile;
  A acc[4][4] = {};
  for (std::int64_t p0 = 0; p0 < k; p0 += k_tile_k) {
    for (int l = int(threadIdx.x); l < k_tile * k_tile_k; l += 256) {
      const int r = l / k_tile_k, q = l % k_tile_k;
      const std::int64_t gi = row0 + r, gp = p0 + q;
      as[q][r] = (gi < m && gp < k) ? to_acc<A>(a[gi * sai + gp * sap]) : A(0);
      const int qb = l / k_tile, jb = l % k_tile;
      const std::int64_t gpb = p0 + qb, gj = col0 + jb;
      bs[qb][jb] = (gpb < k && gj < n) ? to_acc<A>(b[gpb * sbp + gj * sbj]) : A(0);
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < k_tile_k; ++q) {
      A av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        av[i] = as[q][ty + 16 * i];
        bv[i] = bs[q][tx + 16 * i];
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          acc[i][j] += av[i] * bv[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const std::int64_t gi = row0 + ty + 16 * i, gj = col0 + tx + 16 * j;
      if (gi >= m || gj >= n) continue;
      A v = alpha * acc[i][j];
      if (beta != A(0)) v += beta * to_acc<A>(c[gi * n + gj]);  // beta 0: C is not read
      c[gi * n + gj] = from_acc<T>(v);
    }
  }
}

// One output per thread through 16×16 tiles in shared memory, accumulating in f64: simple and
// written apart from the builtin kernel (whose 64×64 tiles and 4×4 outputs per thread it checks),
// yet fast enough that verifying an 8192^3 GEMM fits the point's watchdog. Rows of tiles loop
// over gridDim.y, so m is not bound by the grid's 65535 limit in y.
constexpr int k_ref_tile = 16;

template <typename T>
__global__ void __launch_bounds__(256)
    gemm_reference_kernel(std::int64_t m, std::int64_t n, std::int64_t k, const T* a,
                          std::int64_t sai, std::int64_t sap, const T* b, std::int64_t sbp,
                          std::int64_t sbj, T* c, double alpha, double beta) {
  __shared__ double as[k_ref_tile][k_ref_tile];
  __shared__ double bs[k_ref_tile][k_ref_tile + 1];
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const std::int64_t j = std::int64_t(blockIdx.x) * k_ref_tile + tx;
  const std::int64_t row_tiles = (m + k_ref_tile - 1) / k_ref_tile;
  for (std::int64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
    const std::int64_t i = rt * k_ref_tile + ty;
    double sum = 0;
    for (std::int64_t p0 = 0; p0 < k; p0 += k_ref_tile) {
      as[ty][tx] = (i < m && p0 + tx < k) ? to_acc<double>(a[i * sai + (p0 + tx) * sap]) : 0.0;
      bs[ty][tx] = (p0 + ty < k && j < n) ? to_acc<double>(b[(p0 + ty) * sbp + j * sbj]) : 0.0;
      __syncthreads();
      for (int q = 0; q < k_ref_tile; ++q)
        sum += as[ty][q] * bs[q][tx];
      __syncthreads();
    }
    if (i < m && j < n) {
      double v = alpha * sum;
      if (beta != 0) v += beta * to_acc<double>(c[i * n + j]);
      c[i * n + j] = from_acc<T>(v);
    }
  }
}

// Reads every word of the flush buffer: the caches end up holding it, clean, so no write-back
// of the flush lands in the timed sample that follows. The buffer holds zeros; the sink is never
// written, but the compiler cannot know it.
__global__ void flush_read_kernel(const std::uint64_t* p, std::int64_t n, std::uint64_t* sink) {
  std::uint64_t acc = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    acc ^= p[i];
  }
  if (acc == 0x9e3779b97f4a7c15ull) sink[0] = acc;
}

// What now_ticks() counts per millisecond: %globaltimer counts nanoseconds; AMD's real-time
// counter runs at 100 MHz.
#if defined(KERNELSCAN_GPU_CUDA)
constexpr unsigned long long k_ticks_per_ms = 1000000;
#else
constexpr unsigned long long k_ticks_per_ms = 100000;
#endif

__device__ inline unsigned long long now_ticks() {
#if defined(KERNELSCAN_GPU_CUDA)
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));  // nanoseconds
  return t;
#elif defined(__HIP_DEVICE_COMPILE__) && (defined(__GFX11__) || defined(__GFX12__))
  // gfx11 and gfx12 dropped s_memrealtime: the real-time counter is read by a message
  // (MSG_RTN_GET_REALTIME), as HIP's wall_clock64() does on them.
#if __has_builtin(__builtin_amdgcn_s_sendmsg_rtnl)
  return __builtin_amdgcn_s_sendmsg_rtnl(0x83);
#else  // clang 15 (Debian 12's hipcc) assembles the instruction but has no builtin for it
  unsigned long long t;
  asm volatile("s_sendmsg_rtn_b64 %0, sendmsg(MSG_RTN_GET_REALTIME)\n\ts_waitcnt lgkmcnt(0)"
               : "=s"(t));
  return t;
#endif
#elif defined(__HIP_DEVICE_COMPILE__)
  return __builtin_amdgcn_s_memrealtime();  // the 100 MHz real-time counter of CDNA GPUs
#else
  return 0;  // host pass of hipcc: never called
#endif
}

// Overwrites the block's dynamic shared memory (n words) with a pattern; the sink is never
// written, but the compiler cannot know it, so the stores stay. Then the block waits until every
// block of the launch has arrived (`arrivals` reaching `target`), or `timeout_ticks` have passed:
// while it waits, its shared memory stays taken, so no unit runs more of the scrub's blocks than
// its share and none is left out (shared_scrub.hpp).
__global__ void scrub_shared_kernel(unsigned int n, unsigned int pattern, unsigned int* sink,
                                    unsigned int* arrivals, unsigned int target,
                                    unsigned long long timeout_ticks) {
  extern __shared__ unsigned int words[];
  for (unsigned int i = threadIdx.x; i < n; i += blockDim.x)
    words[i] = pattern ^ (i * 2654435761u);
  __syncthreads();
  const unsigned int x = words[(threadIdx.x * 7u) % n];
  if (x == pattern + 1u && x == 0x9e3779b9u) sink[0] = x;
  if (threadIdx.x != 0) return;
  __threadfence();
  atomicAdd(arrivals, 1u);
  const unsigned long long start = now_ticks();
  while (int(atomicAdd(arrivals, 0u) - target) < 0 && now_ticks() - start < timeout_ticks) {
  }
}

__global__ void hold_kernel(volatile int* flag, unsigned long long timeout_ticks) {
  const unsigned long long start = now_ticks();
  while (flag[0] == 0) {
    if (now_ticks() - start > timeout_ticks) {
      flag[1] = 1;
      return;
    }
  }
}

__global__ void fma_kernel(float* out, int iterations) {
  float x[8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
    x[i] = float(threadIdx.x + i) * 1e-3f;
  const float y = 0.999f, z = 1e-4f;
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int i = 0; i < 8; ++i)
      x[i] = fmaf(x[i], y, z);
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i)
    s += x[i];
  out[blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x] = s;
}

__global__ void hash_words_kernel(const std::uint64_t* p, std::int64_t n, std::uint64_t* partial) {
  const std::int64_t id = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::uint64_t h = 0xcbf29ce484222325ull ^ (std::uint64_t(id) * 0x9e3779b97f4a7c15ull);
  for (std::int64_t w = id; w < n; w += stride)
    h = (h ^ p[w]) * 0x100000001b3ull;
  partial[id] = h;
}

__global__ void xor_keystream_kernel(std::uint64_t* p, std::int64_t n, const std::uint64_t* pad,
                                     int pad_bits, const std::uint64_t* periods) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  const std::int64_t pad_mask = (std::int64_t(1) << pad_bits) - 1;
  for (std::int64_t w = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; w < n; w += stride)
    p[w] ^= pad[w & pad_mask] ^ periods[w >> pad_bits];
}

template <typename T>
__global__ void screen_outputs_kernel(const T* out, const T* ref, std::int64_t n, double atol,
                                      double rtol, std::int64_t u0, std::int64_t u1,
                                      std::uint64_t* irregular, double* sums) {
  __shared__ std::uint64_t bad_s[k_block];
  __shared__ double diff_s[k_block], sq_s[k_block];
  std::uint64_t bad = 0;
  double diff = 0, sq = 0;
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += stride) {
    if constexpr (std::is_integral_v<T>) {
      const auto o = std::int64_t(out[i]), r = std::int64_t(ref[i]);
      if (o == u0 || o == u1 || r == u0 || r == u1) {
        ++bad;
        continue;
      }
    }
    const double o = to_acc<double>(out[i]), r = to_acc<double>(ref[i]);
    const double d = fabs(o - r), m = fabs(r);
    if (isfinite(o) && isfinite(r) && d <= atol + rtol * m) {
      diff += d * d;
      sq += r * r;
    } else {
      ++bad;
    }
  }
  const unsigned l = threadIdx.x;
  bad_s[l] = bad;
  diff_s[l] = diff;
  sq_s[l] = sq;
  __syncthreads();
  for (unsigned apart = k_block / 2; apart > 0; apart /= 2) {
    if (l < apart) {
      bad_s[l] += bad_s[l + apart];
      diff_s[l] += diff_s[l + apart];
      sq_s[l] += sq_s[l + apart];
    }
    __syncthreads();
  }
  if (l == 0) {
    irregular[blockIdx.x] = bad_s[0];
    sums[2 * blockIdx.x] = diff_s[0];
    sums[2 * blockIdx.x + 1] = sq_s[0];
  }
}

// Partials j, j + k_hash_partials, ... of `n` mixed into folded[j] (in place where it is
// `partial`: thread j alone reads and writes the partials of its residue).
__global__ void fold_partials_kernel(const std::uint64_t* partial, std::int64_t n,
                                     std::uint64_t* folded) {
  const std::int64_t j = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  if (j >= k_hash_partials) return;
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ std::uint64_t(j);
  for (std::int64_t i = j; i < n; i += k_hash_partials) {
    h ^= partial[i];
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  folded[j] = h;
}

// Launches report their configuration errors through the last-error state: it is cleared
// before each launch (a failed call elsewhere must not be reported by this one) and read after.
void clear_last_error() {
  (void)hipGetLastError();
}

void launched(const char* what) {
  check(hipGetLastError(), what);
}

int variant_code(stream_variant v) {
  return v == stream_variant::copy    ? 0
         : v == stream_variant::scale ? 1
         : v == stream_variant::add   ? 2
                                      : 3;
}

}  // namespace

void hash_words(const void* p, std::int64_t words, std::uint64_t* partial, std::int64_t threads,
                std::uint64_t* folded, hipStream_t s) {
  clear_last_error();
  hash_words_kernel<<<unsigned(threads / k_block), k_block, 0, s>>>(
      static_cast<const std::uint64_t*>(p), words, partial);
  launched("hash_words");
  clear_last_error();
  fold_partials_kernel<<<unsigned((k_hash_partials + k_block - 1) / k_block), k_block, 0, s>>>(
      partial, threads, folded);
  launched("hash_words (folding)");
}

void screen_outputs(const void* out, const void* ref, dtype t, std::int64_t n, double atol,
                    double rtol, std::uint64_t* irregular, double* sums, unsigned blocks,
                    hipStream_t s) {
  clear_last_error();
  // An integer element holding either unwritten pattern is irregular (the host tells which).
  const std::int64_t u0 = unwritten_integer(t, 0), u1 = unwritten_integer(t, 1);
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    screen_outputs_kernel<T><<<blocks, k_block, 0, s>>>(static_cast<const T*>(out),
                                                        static_cast<const T*>(ref), n, atol, rtol,
                                                        u0, u1, irregular, sums);
  });
  launched("screen_outputs");
}

void xor_keystream(void* p, std::int64_t words, const void* pad, std::int64_t pad_words,
                   const void* periods, hipStream_t s) {
  if (words <= 0) return;
  clear_last_error();
  xor_keystream_kernel<<<grid_for(words), k_block, 0, s>>>(
      static_cast<std::uint64_t*>(p), words, static_cast<const std::uint64_t*>(pad),
      std::countr_zero(std::uint64_t(pad_words)), static_cast<const std::uint64_t*>(periods));
  launched("xor_keystream");
}

void fill_random(void* p, dtype t, std::int64_t count, std::uint64_t seed, hipStream_t s) {
  clear_last_error();
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    fill_random_kernel<T><<<grid_for(count), k_block, 0, s>>>(static_cast<T*>(p), count, seed);
  });
  launched("fill_random");
}

void fill_random_sets(const fill_sets& sets, int buffers, dtype t, std::int64_t count,
                      hipStream_t s) {
  if (buffers <= 0 || count <= 0) return;
  clear_last_error();
  const dim3 grid(grid_for(count), unsigned(buffers));
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    fill_random_sets_kernel<T><<<grid, k_block, 0, s>>>(sets, count);
  });
  launched("fill_random_sets");
}

void fill_words_sets(const fill_sets& sets, int buffers, std::int64_t words, std::uint64_t word,
                     hipStream_t s) {
  if (buffers <= 0 || words <= 0) return;
  clear_last_error();
  const dim3 grid(grid_for(words), unsigned(buffers));
  fill_words_sets_kernel<<<grid, k_block, 0, s>>>(sets, words, word);
  launched("fill_words_sets");
}

void fill_value(void* p, dtype t, std::int64_t count, double value, hipStream_t s) {
  clear_last_error();
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    fill_value_kernel<T><<<grid_for(count), k_block, 0, s>>>(static_cast<T*>(p), count, value);
  });
  launched("fill_value");
}

void fill_arange(void* p, dtype t, std::int64_t count, hipStream_t s) {
  clear_last_error();
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    fill_arange_kernel<T><<<grid_for(count), k_block, 0, s>>>(static_cast<T*>(p), count);
  });
  launched("fill_arange");
}

void fill_unwritten(void* p, dtype t, std::int64_t count, int pattern, hipStream_t s) {
  clear_last_error();
  unsigned char bits[8] = {};
  store_unwritten(t, bits, pattern);
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    T v;
    memcpy(&v, bits, sizeof v);
    fill_bits_kernel<T><<<grid_for(count), k_block, 0, s>>>(static_cast<T*>(p), count, v);
  });
  launched("fill_unwritten");
}

void stream_op(stream_variant v, dtype t, std::int64_t n, double scalar, void* a, void* b, void* c,
               hipStream_t s) {
  clear_last_error();
  const bool aligned = ((reinterpret_cast<std::uintptr_t>(a) | reinterpret_cast<std::uintptr_t>(b) |
                         reinterpret_cast<std::uintptr_t>(c)) %
                        16) == 0;
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    T* pa = static_cast<T*>(a);
    T* pb = static_cast<T*>(b);
    T* pc = static_cast<T*>(c);
    const auto enqueue = [&](auto variant) {
      constexpr int V = decltype(variant)::value;
      if (aligned) {
        const std::int64_t per_block = std::int64_t(k_block) * k_stream_unroll * (16 / sizeof(T));
        const unsigned grid = unsigned(std::max<std::int64_t>((n + per_block - 1) / per_block, 1));
        stream_vector_kernel<V, T><<<grid, k_block, 0, s>>>(n, scalar, pa, pb, pc);
      } else {
        // Enough blocks to fill any current GPU several times over; each thread then loops.
        const unsigned grid =
            unsigned(std::clamp<std::int64_t>((n + k_block - 1) / k_block, 1, 65536));
        stream_kernel<V, T><<<grid, k_block, 0, s>>>(n, scalar, pa, pb, pc);
      }
    };
    switch (variant_code(v)) {
      case 0:
        enqueue(std::integral_constant<int, 0>{});
        break;
      case 1:
        enqueue(std::integral_constant<int, 1>{});
        break;
      case 2:
        enqueue(std::integral_constant<int, 2>{});
        break;
      default:
        enqueue(std::integral_constant<int, 3>{});
        break;
    }
  });
  launched("stream");
}

void stream_reference(stream_variant v, dtype t, std::int64_t n, double scalar, void* a, void* b,
                      void* c, hipStream_t s) {
  clear_last_error();
  const unsigned grid = unsigned((n + k_block - 1) / k_block);
  with_type(t, [&](auto tag) {
    using T = decltype(tag);
    stream_reference_kernel<T><<<grid, k_block, 0, s>>>(
        variant_code(v), n, scalar, static_cast<T*>(a), static_cast<T*>(b), static_cast<T*>(c));
  });
  launched("stream_reference");
}

void gemm_builtin(const gemm_args& g, hipStream_t s) {
  clear_last_error();
  const gemm_strides st = strides_of(g.m, g.n, g.k, g.layout_a, g.layout_b);
  const dim3 grid(unsigned((g.n + k_tile - 1) / k_tile), unsigned((g.m + k_tile - 1) / k_tile));
  auto run = [&](auto tag) {
    using T = decltype(tag);
    using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
    gemm_tiled_kernel<T, A><<<grid, 256, 0, s>>>(
        g.m, g.n, g.k, static_cast<const T*>(g.a), st.a_row, st.a_col, static_cast<const T*>(g.b),
        st.b_row, st.b_col, static_cast<T*>(g.c), A(g.alpha), A(g.beta));
  };
  switch (g.type) {
    case dtype::f64:
      run(double{});
      break;
    case dtype::f32:
      run(float{});
      break;
    case dtype::f16:
      run(gpu_f16{});
      break;
    case dtype::bf16:
      run(gpu_bf16{});
      break;
    default:
      throw std::invalid_argument("gemm: the builtin kernel takes f64, f32, f16 or bf16");
  }
  launched("gemm_builtin");
}

void gemm_reference(const gemm_args& g, hipStream_t s) {
  clear_last_error();
  const gemm_strides st = strides_of(g.m, g.n, g.k, g.layout_a, g.layout_b);
  const std::int64_t row_tiles = (g.m + k_ref_tile - 1) / k_ref_tile;
  const dim3 grid(unsigned((g.n + k_ref_tile - 1) / k_ref_tile),
                  unsigned(std::min<std::int64_t>(row_tiles, 65535)));
  const dim3 block(k_ref_tile, k_ref_tile);
  with_type(g.type, [&](auto tag) {
    using T = decltype(tag);
    gemm_reference_kernel<T><<<grid, block, 0, s>>>(
        g.m, g.n, g.k, static_cast<const T*>(g.a), st.a_row, st.a_col, static_cast<const T*>(g.b),
        st.b_row, st.b_col, static_cast<T*>(g.c), g.alpha, g.beta);
  });
  launched("gemm_reference");
}

void flush_by_reading(const void* buffer, std::uint64_t bytes, void* sink, hipStream_t s) {
  clear_last_error();
  const std::int64_t words = std::int64_t(bytes / 8);
  flush_read_kernel<<<grid_for(words), k_block, 0, s>>>(static_cast<const std::uint64_t*>(buffer),
                                                        words, static_cast<std::uint64_t*>(sink));
  launched("flush_by_reading");
}

bool allow_shared_scrub_bytes(std::int64_t bytes) {
#if defined(KERNELSCAN_GPU_CUDA)
  // Above 48 KiB a kernel has to opt in; HIP gives any block what the device has.
  if (bytes > 48 * 1024) {
    const hipError_t e = cudaFuncSetAttribute(
        scrub_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes));
    if (e != hipSuccess) {
      (void)hipGetLastError();
      return false;
    }
  }
#endif
  return bytes > 0;
}

void scrub_shared_memory(const shared_scrub_plan& plan, unsigned int pattern, void* sink,
                         unsigned int* arrivals, unsigned int target, hipStream_t s) {
  clear_last_error();
  // The blocks wait at most 1 ms for each other: on an idle device all are resident within
  // microseconds; the bound is for a device shared with another process, where some may not be.
  const unsigned int words = unsigned(plan.bytes_per_block / 4);
  scrub_shared_kernel<<<unsigned(plan.blocks), k_block, std::size_t(words) * 4, s>>>(
      words, pattern, static_cast<unsigned int*>(sink), arrivals, target, k_ticks_per_ms);
  launched("scrub_shared_memory");
}

void hold_stream(int* flag, double timeout_ms, hipStream_t s) {
  clear_last_error();
  hold_kernel<<<1, 1, 0, s>>>(flag,
                              static_cast<unsigned long long>(timeout_ms * double(k_ticks_per_ms)));
  launched("hold_stream");
}

void fma_peak(float* out, std::int64_t threads, int iterations, hipStream_t s) {
  clear_last_error();
  fma_kernel<<<unsigned(threads / k_block), k_block, 0, s>>>(out, iterations);
  launched("fma_peak");
}

}  // namespace kernelscan::gpu

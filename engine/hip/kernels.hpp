#pragma once
// The HIP engine's own device code, behind host functions that enqueue it on a stream: input
// initialisation, the STREAM ops, the builtin tiled GEMM and a plain reference GEMM, the
// blocking kernel that holds a stream while launches are queued, and an FMA peak kernel.
// Launch errors throw gpu_error (gpu.hpp).

#include <cstdint>

#include "engine/hip/gpu.hpp"
#include "engine/hip/shared_scrub.hpp"
#include "engine/kernel_spec.hpp"

namespace kernelscan::gpu {

// Seeded values, fill_pattern.hpp's `random`: for floating types, in segments of their own
// scale and shift within [-1, 1); [-8, 8) for signed and [0, 16) for unsigned integers.
void fill_random(void* p, dtype t, std::int64_t count, std::uint64_t seed, hipStream_t s);
void fill_value(void* p, dtype t, std::int64_t count, double value, hipStream_t s);
void fill_arange(void* p, dtype t, std::int64_t count, hipStream_t s);
// What an output holds before a kernel writes it: NaN for floating types, the pattern
// k_unwritten_byte repeated for integers (output_check.hpp).
void fill_unwritten(void* p, dtype t, std::int64_t count, int pattern, hipStream_t s);

// Up to k_fill_sets buffers in one launch (device_backend::fill_all, group_fills): each of
// `count` elements of `t` filled as fill_random fills it from its own seed, or each of `words`
// 64-bit words set to `word` (a constant or unwritten fill whose bytes are whole words).
inline constexpr int k_fill_sets = 16;
struct fill_sets {
  void* p[k_fill_sets];
  std::uint64_t seed[k_fill_sets];
};
void fill_random_sets(const fill_sets& sets, int buffers, dtype t, std::int64_t count,
                      hipStream_t s);
void fill_words_sets(const fill_sets& sets, int buffers, std::int64_t words, std::uint64_t word,
                     hipStream_t s);

// A hash of `words` 64-bit words at `p` (8-byte aligned): thread i of `threads` (a multiple of
// 256) folds words i, i + threads, ... with one FNV-style step each and writes partial[i]; then
// thread j of k_hash_partials mixes partials j, j + k_hash_partials, ... into folded[j] (which
// may be `partial`), so that the host reads k_hash_partials words back, not `threads`, and folds
// them (device_backend::hash_by_words).
inline constexpr std::int64_t k_hash_partials = 256;
void hash_words(const void* p, std::int64_t words, std::uint64_t* partial, std::int64_t threads,
                std::uint64_t* folded, hipStream_t s);

// The first `n` elements of type `t` at `out` screened against those at `ref`
// (device_backend::screen_outputs): block b of `blocks` (at most k_screen_blocks, of 256
// threads) writes how many of its elements do not pass (either value not finite, an integer
// one holding either unwritten pattern, or |out - ref| > atol + rtol * |ref|, in double) to
// irregular[b], and the sums of (out - ref)^2 and ref^2 over those that do to sums[2b] and
// sums[2b + 1].
inline constexpr std::int64_t k_screen_blocks = 256;
void screen_outputs(const void* out, const void* ref, dtype t, std::int64_t n, double atol,
                    double rtol, std::uint64_t* irregular, double* sums, unsigned blocks,
                    hipStream_t s);

// Word j of the `words` 64-bit words at `p` (8-byte aligned) XORed with
// pad[j % pad_words] ^ periods[j / pad_words] (device_backend::xor_keystream); `pad_words` is a
// power of two.
void xor_keystream(void* p, std::int64_t words, const void* pad, std::int64_t pad_words,
                   const void* periods, hipStream_t s);

// copy c=a, scale b=s*c, add c=a+b, triad a=b+s*c, over n elements.
void stream_op(stream_variant v, dtype t, std::int64_t n, double scalar, void* a, void* b, void* c,
               hipStream_t s);

// The same arithmetic written independently (one element per thread, in f64), for checking.
void stream_reference(stream_variant v, dtype t, std::int64_t n, double scalar, void* a, void* b,
                      void* c, hipStream_t s);

// C (m×n, row-major) = alpha·A·B + beta·C, with A m×k and B k×n row- or column-major.
struct gemm_args {
  std::int64_t m = 0, n = 0, k = 0;
  dtype type = dtype::f32;
  layout layout_a = layout::row, layout_b = layout::row;
  double alpha = 1, beta = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
};
// 64×64 tiles through shared memory, 4×4 outputs per thread, f32 accumulation (f64 for f64).
void gemm_builtin(const gemm_args& g, hipStream_t s);
// One output per thread through 16×16 tiles, accumulating in f64: simple, written apart from the
// builtin kernel, the answer others are checked against. Any m (rows loop over the grid).
void gemm_reference(const gemm_args& g, hipStream_t s);

// Evicts the caches by reading `bytes` of `buffer` (zeros; `sink` holds one u64, never written),
// leaving clean lines behind.
void flush_by_reading(const void* buffer, std::uint64_t bytes, void* sink, hipStream_t s);

// Lets the scrub's blocks have `bytes` of dynamic shared memory each (CUDA wants a kernel to opt
// in above 48 KiB); false where the device refuses.
bool allow_shared_scrub_bytes(std::int64_t bytes);

// Overwrites the shared memory of every compute unit with a pattern, as `plan` divides it
// (`sink`: one u32, never written), so that no launch reads what an earlier one left there.
// `arrivals` counts the blocks of every scrub so far; `target` is its count after this one's.
void scrub_shared_memory(const shared_scrub_plan& plan, unsigned int pattern, void* sink,
                         unsigned int* arrivals, unsigned int target, hipStream_t s);

// Holds the stream until flag[0] is set by the host, or about `timeout_ms` has passed (then
// flag[1] is set): launches queued behind it then run back to back, so events time the
// kernels, not the host's launch rate.
void hold_stream(int* flag, double timeout_ms, hipStream_t s);

// `threads` threads (a multiple of 256) each running 8 independent FMA chains for `iterations`
// steps: 16 FLOP per iteration per thread. `out` (threads floats) keeps the compiler from removing
// the work.
void fma_peak(float* out, std::int64_t threads, int iterations, hipStream_t s);

}  // namespace kernelscan::gpu

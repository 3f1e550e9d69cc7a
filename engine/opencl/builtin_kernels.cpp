#include "engine/opencl/builtin_kernels.hpp"

#include "engine/fill_pattern.hpp"

namespace kernelscan::opencl {

// The OpenCL backend's own kernels, in OpenCL C 1.2, built once per element type with the macros
// of element_macros(). They compute exactly what the HIP engine's kernels (engine/hip/kernels.hip)
// and fill_pattern.hpp define.
const char* const k_builtin_source = R"CLC(
#ifdef KS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double ref_t;
#else
typedef float ref_t;
#endif

inline ulong ks_mix64(ulong x) {
  x += 0x9e3779b97f4a7c15UL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9UL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebUL;
  return x ^ (x >> 31);
}

inline ushort ks_to_bf16(float v) {
  uint x = as_uint(v);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (ushort)((x >> 16) | 0x40u);
  return (ushort)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

inline float ks_from_bf16(ushort v) { return as_float(((uint)v) << 16); }

/* The scale and shift (x, y) of the segment of a random fill that element i is in
   (fill_pattern.hpp); `f` is the fill's draw. */
inline float2 ks_fill_segment(ulong f, long i) {
  const ulong g = ks_mix64(f ^ ((ulong)i >> (6 + f % 7)));
  return (float2)(((g >> 8) & 1) ? 0.5f : 1.0f, (float)(uint)(g % 3) * 0.5f);
}

/* Element i of a random fill, in a segment of scale and shift `sh` (floating types only).
   (r >> 40 has 24 bits: through uint, a CPU device converts it to float in SIMD registers.) */
inline void ks_fill_random_at(__global T* p, long i, ulong seed, float2 sh) {
  ulong r = ks_mix64(seed ^ ks_mix64((ulong)i));
#if KS_FLOATING
  float u = (float)(uint)(r >> 40) * (1.0f / 16777216.0f);
  STORE(p, i, sh.x * (u - sh.y));
#elif KS_SIGNED
  STORE(p, i, (ACC)((long)(r >> 60) - 8));
#else
  STORE(p, i, (ACC)(r >> 60));
#endif
}

/* Elements strided (span 0) or work-item i's run [i * span, (i + 1) * span) (a CPU device: a
   counted loop over its own run is one the compiler vectorises, and each cache line is written
   whole by one work-item), a segment at a time: its draw once, not per element. */
inline void ks_fill_random_run(__global T* p, long n, ulong seed, long span) {
  const ulong f = ks_mix64(seed ^ KS_FILL_SEGMENT_SALT);
  if (span > 0) {
    const long start = get_global_id(0) * span, end = min(n, start + span);
    const int bits = (int)(6 + f % 7);
    for (long first = start; first < end;) {
      const long last = min(end, ((first >> bits) + 1) << bits);
      const float2 sh = ks_fill_segment(f, first);
      for (long i = first; i < last; ++i) ks_fill_random_at(p, i, seed, sh);
      first = last;
    }
  } else {
    for (long i = get_global_id(0); i < n; i += get_global_size(0))
      ks_fill_random_at(p, i, seed, ks_fill_segment(f, i));
  }
}

__kernel void fill_random(__global T* p, long n, ulong seed, long span) {
  ks_fill_random_run(p, n, seed, span);
}

/* Up to 8 buffers of n elements filled as fill_random fills each, buffer j (get_global_id(1))
   from seed sj, in one command: a batched sample's sets are refreshed in a few commands rather
   than one per buffer. The arguments past the range's buffers are not read. */
__kernel void fill_random_sets(long n, long span, __global T* p0, ulong s0, __global T* p1,
                               ulong s1, __global T* p2, ulong s2, __global T* p3, ulong s3,
                               __global T* p4, ulong s4, __global T* p5, ulong s5,
                               __global T* p6, ulong s6, __global T* p7, ulong s7) {
  switch (get_global_id(1)) {
    case 0: ks_fill_random_run(p0, n, s0, span); return;
    case 1: ks_fill_random_run(p1, n, s1, span); return;
    case 2: ks_fill_random_run(p2, n, s2, span); return;
    case 3: ks_fill_random_run(p3, n, s3, span); return;
    case 4: ks_fill_random_run(p4, n, s4, span); return;
    case 5: ks_fill_random_run(p5, n, s5, span); return;
    case 6: ks_fill_random_run(p6, n, s6, span); return;
    default: ks_fill_random_run(p7, n, s7, span); return;
  }
}

/* n 64-bit words of each of up to 8 buffers (get_global_id(1)) set to w, strided (span 0) or
   in runs of span words: a constant or unwritten fill of buffers whose size is whole words, in
   one command. */
inline void ks_fill_words_run(__global ulong* p, long n, ulong w, long span) {
  if (span > 0) {
    const long start = get_global_id(0) * span, end = min(n, start + span);
    for (long i = start; i < end; ++i) p[i] = w;
  } else {
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) p[i] = w;
  }
}

__kernel void fill_words_sets(long n, long span, ulong w, __global ulong* p0, __global ulong* p1,
                              __global ulong* p2, __global ulong* p3, __global ulong* p4,
                              __global ulong* p5, __global ulong* p6, __global ulong* p7) {
  switch (get_global_id(1)) {
    case 0: ks_fill_words_run(p0, n, w, span); return;
    case 1: ks_fill_words_run(p1, n, w, span); return;
    case 2: ks_fill_words_run(p2, n, w, span); return;
    case 3: ks_fill_words_run(p3, n, w, span); return;
    case 4: ks_fill_words_run(p4, n, w, span); return;
    case 5: ks_fill_words_run(p5, n, w, span); return;
    case 6: ks_fill_words_run(p6, n, w, span); return;
    default: ks_fill_words_run(p7, n, w, span); return;
  }
}

/* A hash of n 64-bit words: work-item i folds words i, i + size, ... (span 0: neighbouring
   work-items read neighbouring words, as a GPU wants) or words [i * span, (i + 1) * span) (a CPU
   device, whose work-items run one after another on a core, wants each reading its own run of
   memory) with one FNV-style step each (a bijection of its state), and the host folds the
   work-items' hashes. */
__kernel void hash_words(__global const ulong* p, long n, __global ulong* partial, long span,
                         long first) {
  const long id = get_global_id(0);
  ulong h = 0xcbf29ce484222325UL ^ ((ulong)id * 0x9e3779b97f4a7c15UL);
  if (span > 0) {
    const long end = min(n, (id + 1) * span);
    for (long w = id * span; w < end; ++w) h = (h ^ p[w]) * 0x100000001b3UL;
  } else {
    for (long w = id; w < n; w += get_global_size(0)) h = (h ^ p[w]) * 0x100000001b3UL;
  }
  partial[first + id] = h;
}

#if defined(KS_FP64)
#define KS_SCREEN_BLOCK 256
/* n elements of `out` screened against `ref` on the device (device_backend::screen_outputs):
   an element passes where both values are finite and |out - ref| <= atol + rtol * |ref|, as a
   block of output_check.cpp's vectorised pass judges it, in double; an integer one, where
   neither value is one of the unwritten patterns u0 and u1 (as long) either. Work-group g
   writes how many of its elements do not pass to parts[g], and the sums of (out - ref)^2 and
   ref^2 over those that do to parts[G + 2g] and parts[G + 2g + 1] (their bits), for G groups.
   The elements strided or in runs of `span` as hash_words reads its words; KS_SCREEN_BLOCK
   work-items a group. */
inline void ks_screen_one(__global const T* out, __global const T* ref, long i, double atol,
                          double rtol, long u0, long u1, ulong* bad, double* diff, double* sq) {
#if !KS_FLOATING
  const long ob = (long)out[i], rb = (long)ref[i];
  if (ob == u0 || ob == u1 || rb == u0 || rb == u1) {
    *bad += 1;
    return;
  }
#endif
  const double o = (double)LOAD(out, i), r = (double)LOAD(ref, i);
  const double d = fabs(o - r), m = fabs(r);
  if (isfinite(o) && isfinite(r) && d <= atol + rtol * m) {
    *diff += d * d;
    *sq += r * r;
  } else {
    *bad += 1;
  }
}

__kernel void screen_outputs(__global const T* out, __global const T* ref, long n, double atol,
                             double rtol, long u0, long u1, long span, __global ulong* parts) {
  __local ulong bad_l[KS_SCREEN_BLOCK];
  __local double diff_l[KS_SCREEN_BLOCK], sq_l[KS_SCREEN_BLOCK];
  const long id = get_global_id(0);
  ulong bad = 0;
  double diff = 0, sq = 0;
  if (span > 0) {
    const long end = min(n, (id + 1) * span);
    for (long i = id * span; i < end; ++i)
      ks_screen_one(out, ref, i, atol, rtol, u0, u1, &bad, &diff, &sq);
  } else {
    for (long i = id; i < n; i += get_global_size(0))
      ks_screen_one(out, ref, i, atol, rtol, u0, u1, &bad, &diff, &sq);
  }
  const int l = get_local_id(0);
  bad_l[l] = bad;
  diff_l[l] = diff;
  sq_l[l] = sq;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int apart = KS_SCREEN_BLOCK / 2; apart > 0; apart /= 2) {
    if (l < apart) {
      bad_l[l] += bad_l[l + apart];
      diff_l[l] += diff_l[l + apart];
      sq_l[l] += sq_l[l + apart];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) {
    const long g = get_group_id(0), groups = get_num_groups(0);
    parts[g] = bad_l[0];
    parts[groups + 2 * g] = as_ulong(diff_l[0]);
    parts[groups + 2 * g + 1] = as_ulong(sq_l[0]);
  }
}
#endif

/* Word w of n 64-bit words XORed with pad[w & (2^pad_bits - 1)] ^ periods[w >> pad_bits] (the
   answer mask's keystream); the words strided or in runs of `span` as hash_words reads them. */
__kernel void xor_keystream(__global ulong* p, long n, __global const ulong* pad, int pad_bits,
                            __global const ulong* periods, long span) {
  const long id = get_global_id(0);
  const long pad_mask = ((long)1 << pad_bits) - 1;
  if (span > 0) {
    const long end = min(n, (id + 1) * span);
    for (long w = id * span; w < end; ++w) p[w] ^= pad[w & pad_mask] ^ periods[w >> pad_bits];
  } else {
    for (long w = id; w < n; w += get_global_size(0))
      p[w] ^= pad[w & pad_mask] ^ periods[w >> pad_bits];
  }
}

__kernel void fill_arange(__global T* p, long n, long span) {
  if (span > 0) {
    const long start = get_global_id(0) * span, end = min(n, start + span);
    for (long i = start; i < end; ++i) STORE(p, i, (ACC)i);
  } else {
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) STORE(p, i, (ACC)i);
  }
}

/* copy c=a, scale b=s*c, add c=a+b, triad a=b+s*c. With span > 0 (a CPU device) each work-item
   takes a run of span neighbouring elements, one loop per variant the compiler vectorises; a
   strided loop with the variant chosen per element ran as scalar code there, slower than a
   plain one-element kernel, and the bandwidth of the measured roofline came from it. */
__kernel void stream_op(int variant, long n, ACC s, __global T* a, __global T* b, __global T* c,
                        long span) {
  if (span > 0) {
    const long start = get_global_id(0) * span, end = min(n, start + span);
    switch (variant) {
      case 0: for (long i = start; i < end; ++i) STORE(c, i, LOAD(a, i)); return;
      case 1: for (long i = start; i < end; ++i) STORE(b, i, s * LOAD(c, i)); return;
      case 2: for (long i = start; i < end; ++i) STORE(c, i, LOAD(a, i) + LOAD(b, i)); return;
      default: for (long i = start; i < end; ++i) STORE(a, i, LOAD(b, i) + s * LOAD(c, i)); return;
    }
  }
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
    switch (variant) {
      case 0: STORE(c, i, LOAD(a, i)); break;
      case 1: STORE(b, i, s * LOAD(c, i)); break;
      case 2: STORE(c, i, LOAD(a, i) + LOAD(b, i)); break;
      default: STORE(a, i, LOAD(b, i) + s * LOAD(c, i)); break;
    }
  }
}

/* The same arithmetic written independently: one element per work-item, in ref_t. */
__kernel void stream_reference(int variant, long n, ref_t s, __global T* a, __global T* b,
                               __global T* c) {
  long i = get_global_id(0);
  if (i >= n) return;
  if (variant == 0) STORE(c, i, (ref_t)LOAD(a, i));
  if (variant == 1) STORE(b, i, s * (ref_t)LOAD(c, i));
  if (variant == 2) STORE(c, i, (ref_t)LOAD(a, i) + (ref_t)LOAD(b, i));
  if (variant == 3) STORE(a, i, (ref_t)LOAD(b, i) + s * (ref_t)LOAD(c, i));
}

/* C (m x n, row-major) = alpha*A*B + beta*C; A(i,p) = a[i*sai + p*sap], B(p,j) = b[p*sbp + j*sbj].
   64x64 tiles through local memory, 16x16 work-items of 4x4 outputs each. */
#define KS_TILE 64
#define KS_TILE_K 16
__kernel __attribute__((reqd_work_group_size(256, 1, 1)))
void gemm_tiled(long m, long n, long k, __global const T* a, long sai, long sap,
                __global const T* b, long sbp, long sbj, __global T* c, ACC alpha, ACC beta) {
  __local ACC as[KS_TILE_K][KS_TILE + 1];
  __local ACC bs[KS_TILE_K][KS_TILE + 1];
  const int t = (int)get_local_id(0);
  const int tx = t % 16, ty = t / 16;
  const long row0 = (long)get_group_id(1) * KS_TILE;
  const long col0 = (long)get_group_id(0) * KS_TILE;
  ACC acc[4][4];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = 0;
  for (long p0 = 0; p0 < k; p0 += KS_TILE_K) {
    for (int l = t; l < KS_TILE * KS_TILE_K; l += 256) {
      const int r = l / KS_TILE_K, q = l % KS_TILE_K;
      const long gi = row0 + r, gp = p0 + q;
      as[q][r] = (gi < m && gp < k) ? (ACC)LOAD(a, gi * sai + gp * sap) : (ACC)0;
      const int qb = l / KS_TILE, jb = l % KS_TILE;
      const long gpb = p0 + qb, gj = col0 + jb;
      bs[qb][jb] = (gpb < k && gj < n) ? (ACC)LOAD(b, gpb * sbp + gj * sbj) : (ACC)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int q = 0; q < KS_TILE_K; ++q) {
      ACC av[4], bv[4];
      for (int i = 0; i < 4; ++i) {
        av[i] = as[q][ty + 16 * i];
        bv[i] = bs[q][tx + 16 * i];
      }
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) acc[i][j] += av[i] * bv[j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      const long gi = row0 + ty + 16 * i, gj = col0 + tx + 16 * j;
      if (gi >= m || gj >= n) continue;
      ACC v = alpha * acc[i][j];
      if (beta != (ACC)0) v += beta * (ACC)LOAD(c, gi * n + gj); /* beta 0: C is not read */
      STORE(c, gi * n + gj, v);
    }
  }
}

/* One work-item per output, accumulating in ref_t: slow, simple, the answer others are checked
   against. */
__kernel void gemm_reference(long m, long n, long k, __global const T* a, long sai, long sap,
                             __global const T* b, long sbp, long sbj, __global T* c, ref_t alpha,
                             ref_t beta) {
  const long id = get_global_id(0);
  if (id >= m * n) return;
  const long i = id / n, j = id % n;
  ref_t sum = 0;
  for (long p = 0; p < k; ++p)
    sum += (ref_t)LOAD(a, i * sai + p * sap) * (ref_t)LOAD(b, p * sbp + j * sbj);
  ref_t v = alpha * sum;
  if (beta != (ref_t)0) v += beta * (ref_t)LOAD(c, i * n + j);
  STORE(c, i * n + j, v);
}

/* Reads every word of the cache flush buffer, which evicts what the caches held and leaves clean
   lines: no write-back of the flush itself lands in the next timed sample. The buffer holds
   zeros; the sink is never written, but the compiler cannot know it. */
__kernel void flush_caches(__global const ulong* p, long n, __global ulong* sink) {
  ulong acc = 0;
  for (long i = get_global_id(0); i < n; i += get_global_size(0)) acc ^= p[i];
  if (acc == 0x9e3779b97f4a7c15UL) sink[0] = acc;
}

/* Overwrites n words of work-group local memory with a pattern; the sink is never written, but
   the compiler cannot know it, so the stores stay. Where `meet` is not 0, each work-group then
   waits (a bounded while) until `meet` work-groups have arrived: `arrivals` reaching `target`.
   A waiting work-group holds its thread of a CPU device, so the others must run on the other
   threads, and every thread's local memory gets written. */
__kernel void scrub_local(__local uint* l, uint n, uint pattern, __global uint* sink,
                          __global volatile uint* arrivals, uint meet, uint target) {
  for (uint i = get_local_id(0); i < n; i += get_local_size(0)) l[i] = pattern ^ (i * 2654435761u);
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint x = l[(get_local_id(0) * 7u) % n];
  if (x == pattern + 1u && x == 0x9e3779b9u) sink[0] = x;
  if (meet == 0u || get_local_id(0) != 0) return;
  atomic_inc(arrivals);
  for (uint spin = 0; spin < (1u << 24) && (int)(atomic_add(arrivals, 0u) - target) < 0; ++spin) {
  }
}

/* 8 FMAs of a float8 per work-item and iteration: 16 FLOP per iteration. Run as 8 independent
   float8 chains of an eighth of the iterations each (the rest on the first): a CPU driver runs
   a work-group's work-items one after another, each its whole loop, so that one chain would
   wait out each FMA's latency (35 GFLOP/s on PoCL on 2 AVX-512 cores); 8 keep the FMA units
   busy. A vector type rather than an array, so that the chains stay in SIMD registers. */
__kernel void fma_peak(__global float* out, int iterations) {
  const float8 x0 = (float8)(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f) * 1e-3f +
                    (float)get_local_id(0) * 1e-3f;
  float8 a = x0, b = x0 + 0.01f, c = x0 + 0.02f, d = x0 + 0.03f, e = x0 + 0.04f,
         f = x0 + 0.05f, g = x0 + 0.06f, h = x0 + 0.07f;
  const float8 y = (float8)(0.999f), z = (float8)(1e-4f);
  for (int it = 0; it < iterations / 8; ++it) {
    a = fma(a, y, z);
    b = fma(b, y, z);
    c = fma(c, y, z);
    d = fma(d, y, z);
    e = fma(e, y, z);
    f = fma(f, y, z);
    g = fma(g, y, z);
    h = fma(h, y, z);
  }
  for (int it = 0; it < iterations % 8; ++it) a = fma(a, y, z);
  const float8 x = ((a + b) + (c + d)) + ((e + f) + (g + h));
  out[get_global_id(0)] = x.s0 + x.s1 + x.s2 + x.s3 + x.s4 + x.s5 + x.s6 + x.s7;
}
)CLC";

std::string element_prelude(dtype t, bool fp64) {
  // T: how the type is stored; ACC: what kernels compute in (f64 for 32- and 64-bit types other
  // than f32 where the device has it, f32 otherwise, as on HIP); LOAD and STORE convert.
  std::string d = (fp64 ? "#define KS_FP64 1\n" : "") +
                  std::string("#define KS_FILL_SEGMENT_SALT ") +
                  std::to_string(k_fill_segment_salt) + "UL\n";
  const std::string wide = fp64 ? "double" : "float";
  auto floating = [&](const std::string& type, const std::string& acc, const std::string& load,
                      const std::string& store) {
    return d + "#define T " + type + "\n#define ACC " + acc +
           "\n#define KS_FLOATING 1\n#define KS_SIGNED 1\n#define LOAD(p, i) " + load +
           "\n#define STORE(p, i, v) " + store + "\n";
  };
  auto integer = [&](const std::string& type, const std::string& acc, bool is_signed) {
    return d + "#define T " + type + "\n#define ACC " + acc +
           "\n#define KS_FLOATING 0\n#define KS_SIGNED " + (is_signed ? "1" : "0") +
           "\n#define LOAD(p, i) ((ACC)(p)[i])\n#define STORE(p, i, v) ((p)[i] = convert_" + type +
           "_sat_rtz((ACC)(v)))\n";
  };
  switch (t) {
    case dtype::f32:
      return floating("float", "float", "((p)[i])", "((p)[i] = (float)(v))");
    case dtype::f64:
      return floating("double", "double", "((p)[i])", "((p)[i] = (double)(v))");
    case dtype::f16:
      return floating("half", "float", "vload_half((i), (p))",
                      "vstore_half_rte((float)(v), (i), (p))");
    case dtype::bf16:
      return floating("ushort", "float", "ks_from_bf16((p)[i])",
                      "((p)[i] = ks_to_bf16((float)(v)))");
    case dtype::i64:
      return integer("long", wide, true);
    case dtype::i32:
      return integer("int", wide, true);
    case dtype::u32:
      return integer("uint", wide, false);
    case dtype::i8:
      return integer("char", "float", true);
    case dtype::u8:
      return integer("uchar", "float", false);
  }
  return "";
}

}  // namespace kernelscan::opencl

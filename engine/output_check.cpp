#include "engine/output_check.hpp"

#include <string.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace kernelscan {

namespace {

// Elements one at a time, every case told apart: unwritten, equal (infinities, and NaN where the
// reference has NaN), not finite, within tolerance or not.
template <typename Raw, typename Decode>
void compare_exact(const unsigned char* o, const unsigned char* r, std::int64_t n,
                   std::uint64_t offset, double atol, double rtol, double floor, bool floating,
                   Raw unwritten, Decode decode, double& max_abs, double& max_rel,
                   double& sum_sq_diff, double& sum_sq_ref, std::uint64_t& near_zero,
                   std::uint64_t& not_finite, std::uint64_t& unwritten_count, std::uint64_t& wrong,
                   std::uint64_t& first_wrong) {
  for (std::int64_t i = 0; i < n; ++i, o += sizeof(Raw), r += sizeof(Raw)) {
    Raw ro, rr;
    std::memcpy(&ro, o, sizeof ro);
    std::memcpy(&rr, r, sizeof rr);
    const double ov = decode(ro), rv = decode(rr);
    if (std::fabs(rv) <= atol) ++near_zero;
    if (!std::isfinite(rv)) ++not_finite;
    // Any NaN is unwritten for floating types; the pattern's bytes for integers.
    const bool o_unwritten = floating ? std::isnan(ov) : ro == unwritten;
    const bool r_unwritten = floating ? std::isnan(rv) : rr == unwritten;
    bool bad = false;
    if (o_unwritten && !r_unwritten) {
      ++unwritten_count;
      bad = true;
    } else if (ov == rv || (std::isnan(ov) && std::isnan(rv))) {
      bad = false;  // equal, infinities included; or NaN where the reference has NaN
    } else if (!std::isfinite(ov) || !std::isfinite(rv)) {
      bad = true;
      max_abs = max_rel = std::numeric_limits<double>::infinity();
    } else {
      const double d = std::fabs(ov - rv);
      sum_sq_diff += d * d;
      max_abs = std::max(max_abs, d);
      const double denom = std::fabs(rv) + floor;
      if (denom > 0) max_rel = std::max(max_rel, d / denom);
      bad = !(d <= atol + rtol * std::fabs(rv));
    }
    if (std::isfinite(rv)) sum_sq_ref += rv * rv;
    if (bad) {
      ++wrong;
      first_wrong = std::min(first_wrong, offset + std::uint64_t(i));
    }
  }
}

// GCC builds the vectorised comparison for AVX2 as well, picked at run time where the processor
// has it (twice the doubles a vector); clang does not clone function templates.
#if defined(__GNUC__) && !defined(__clang__)
#define KS_ALSO_FOR_AVX2 __attribute__((target_clones("avx2", "default")))
#else
#define KS_ALSO_FOR_AVX2
#endif
// Where clang cannot vectorise the loop for an element type (a table's loads, 64-bit integers
// converted), it runs it a block at a time all the same: no reason to fail the build.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpass-failed"
#endif

// Elements per block of the vectorised comparison.
constexpr std::int64_t k_block = 1024;

// The unsigned integer of `Raw`'s size: an element's bits, as the keystream is XORed in.
template <typename Raw>
using bits_of = std::conditional_t<
    sizeof(Raw) == 1, std::uint8_t,
    std::conditional_t<sizeof(Raw) == 2, std::uint16_t,
                       std::conditional_t<sizeof(Raw) == 4, std::uint32_t, std::uint64_t>>>;

// Element `i` of the elements at `p`; with `Masked`, XORed with element `i` of the stream at
// `key`.
template <typename Raw, bool Masked>
inline Raw load_raw(const unsigned char* p, const unsigned char* key, std::int64_t i) {
  bits_of<Raw> bits;
  __builtin_memcpy(&bits, p + i * std::int64_t(sizeof bits), sizeof bits);
  if constexpr (Masked) {
    bits_of<Raw> k;
    __builtin_memcpy(&k, key + i * std::int64_t(sizeof k), sizeof k);
    bits ^= k;
  }
  return std::bit_cast<Raw>(bits);
}

// A block of `n` elements where, as is usual, every element passes: both values finite, the
// output not the unwritten pattern, the difference within tolerance. Vectorised, its sums taken
// in another order than one element at a time; it adds to the sums and maxima only where every
// element passes, and otherwise returns false having changed nothing (compare_exact's case).
// Where all pass, compare_exact would find the same: no element is unwritten or wrong, and an
// equal pair adds nothing to what a difference of zero adds here. With `Masked`, the reference's
// elements are XORed with the stream at `key` as they are read.
template <typename Raw, bool Masked, typename Decode>
KS_ALSO_FOR_AVX2 bool compare_passing(const unsigned char* o, const unsigned char* r,
                                      const unsigned char* key, std::int64_t n, double atol,
                                      double rtol, double floor, bool floating, Raw unwritten,
                                      Decode decode, double& max_abs, double& max_rel,
                                      double& sum_sq_diff, double& sum_sq_ref,
                                      std::uint64_t& near_zero) {
  constexpr double largest = std::numeric_limits<double>::max();
  const auto unwritten_bits = std::bit_cast<bits_of<Raw>>(unwritten);
  double block_abs = 0, block_rel = 0, diff = 0, ref = 0;
  std::uint64_t zeros = 0, irregular = 0;
#pragma omp simd reduction(+ : diff, ref, zeros, irregular) reduction(max : block_abs, block_rel)
  for (std::int64_t i = 0; i < n; ++i) {
    const Raw ro = load_raw<Raw, false>(o, nullptr, i);
    const Raw rr = load_raw<Raw, Masked>(r, key, i);
    const double ov = decode(ro), rv = decode(rr);
    const double d = std::fabs(ov - rv), magnitude = std::fabs(rv);
    // Every comparison with NaN is false: NaN and infinities are irregular. Bitwise `&` and
    // the pattern's bits compared as integers, so that the loop has no branch to vectorise.
    const bool passes = (std::fabs(ov) <= largest) & (magnitude <= largest) &
                        (d <= atol + rtol * magnitude) &
                        (floating | (std::bit_cast<bits_of<Raw>>(ro) != unwritten_bits));
    irregular += passes ? 0 : 1;
    zeros += magnitude <= atol ? 1 : 0;
    diff += d * d;
    ref += rv * rv;
    const double denom = magnitude + floor;
    const double rel = denom > 0 ? d / denom : 0;
    block_abs = d > block_abs ? d : block_abs;
    block_rel = rel > block_rel ? rel : block_rel;
  }
  if (irregular) return false;
  max_abs = std::max(max_abs, block_abs);
  max_rel = std::max(max_rel, block_rel);
  sum_sq_diff += diff;
  sum_sq_ref += ref;
  near_zero += zeros;
  return true;
}

// The comparison of one dtype: `Raw` is how the device stores an element, `decode` its value as a
// double. Inlined per type and summed in locals, so that a large output is compared at the speed
// it is read back (a call per element and stores through `e` cost several times more): block by
// block, vectorised where every element of a block passes, one element at a time where not.
// A masked reference is unmasked as it is read: the block's keystream is drawn into `key` (in
// the processor's cache), and only a block that does not pass is unmasked there whole for the
// element-by-element comparison.
template <typename Raw, typename Decode>
void compare_typed(const unsigned char* o, const unsigned char* r, std::int64_t n,
                   std::uint64_t offset, double atol, double rtol, output_errors& e, bool floating,
                   Raw unwritten, Decode decode, const masked_answer* masked) {
  const double floor = rtol > 0 ? atol / rtol : 0;
  double max_abs = e.max_abs, max_rel = e.max_rel, sum_sq_diff = 0, sum_sq_ref = 0;
  std::uint64_t near_zero = 0, not_finite = 0, unwritten_count = 0, wrong = 0;
  std::uint64_t first_wrong = e.first_wrong;
  alignas(64) unsigned char key[k_block * sizeof(Raw)];
  for (std::int64_t start = 0; start < n; start += k_block) {
    const std::int64_t count = std::min(k_block, n - start);
    const unsigned char* ob = o + start * std::int64_t(sizeof(Raw));
    const unsigned char* rb = r + start * std::int64_t(sizeof(Raw));
    const std::size_t bytes = std::size_t(count) * sizeof(Raw);
    bool passed;
    if (masked) {
      masked->mask->keystream(key, bytes, masked->byte_offset + std::uint64_t(start) * sizeof(Raw),
                              masked->buffer);
      passed =
          compare_passing<Raw, true>(ob, rb, key, count, atol, rtol, floor, floating, unwritten,
                                     decode, max_abs, max_rel, sum_sq_diff, sum_sq_ref, near_zero);
      if (!passed) {
        for (std::size_t b = 0; b < bytes; ++b)
          key[b] ^= rb[b];
        rb = key;
      }
    } else {
      passed = compare_passing<Raw, false>(ob, rb, nullptr, count, atol, rtol, floor, floating,
                                           unwritten, decode, max_abs, max_rel, sum_sq_diff,
                                           sum_sq_ref, near_zero);
    }
    if (passed) continue;
    compare_exact<Raw>(ob, rb, count, offset + std::uint64_t(start), atol, rtol, floor, floating,
                       unwritten, decode, max_abs, max_rel, sum_sq_diff, sum_sq_ref, near_zero,
                       not_finite, unwritten_count, wrong, first_wrong);
  }
  // The stream, and a block unmasked in its place, do not outlive the comparison.
  if (masked) explicit_bzero(key, sizeof key);
  e.compared += std::uint64_t(std::max<std::int64_t>(n, 0));
  e.ref_near_zero += near_zero;
  e.ref_not_finite += not_finite;
  e.unwritten += unwritten_count;
  e.wrong += wrong;
  e.first_wrong = first_wrong;
  e.max_abs = max_abs;
  e.max_rel = max_rel;
  e.sum_sq_diff += sum_sq_diff;
  e.sum_sq_ref += sum_sq_ref;
}

// The unwritten pattern of `t` as its stored type.
template <typename Raw>
Raw unwritten_raw(dtype t, int pattern) {
  unsigned char bytes[sizeof(Raw)];
  store_unwritten(t, bytes, pattern);
  Raw v;
  std::memcpy(&v, bytes, sizeof v);
  return v;
}

template <typename Raw>
auto as_double = [](Raw v) { return double(v); };

// double(v) from its 32-bit halves, which vectorises where the processor converts no 64-bit
// integers (AVX2): both halves are exact as doubles, and their sum is v rounded once.
auto i64_as_double = [](std::int64_t v) {
  const auto bits = std::uint64_t(v);
  const double high = double(std::int32_t(std::uint32_t(bits >> 32))) * 0x1p32;
  const double low = double(std::int32_t(std::uint32_t(bits) ^ 0x80000000u)) + 0x1p31;
  return high + low;
};

}  // namespace

void compare_outputs(dtype t, const void* out, const void* ref, std::int64_t n,
                     std::uint64_t offset, double atol, double rtol, output_errors& e, int pattern,
                     const masked_answer* masked) {
  const auto* o = static_cast<const unsigned char*>(out);
  const auto* r = static_cast<const unsigned char*>(ref);
  auto run = [&]<typename Raw>(Raw unwritten, auto decode) {
    compare_typed<Raw>(o, r, n, offset, atol, rtol, e, is_floating(t), unwritten, decode, masked);
  };
  switch (t) {
    case dtype::f64:
      return run(unwritten_raw<double>(t, pattern), as_double<double>);
    case dtype::f32:
      return run(unwritten_raw<float>(t, pattern), as_double<float>);
    case dtype::f16:
      return run(unwritten_raw<std::uint16_t>(t, pattern),
                 [](std::uint16_t bits) { return double(f16_to_float(bits)); });
    case dtype::bf16:
      return run(unwritten_raw<std::uint16_t>(t, pattern),
                 [](std::uint16_t bits) { return decode_bf16(bits); });
    case dtype::i64:
      return run(unwritten_raw<std::int64_t>(t, pattern), i64_as_double);
    case dtype::i32:
      return run(unwritten_raw<std::int32_t>(t, pattern), as_double<std::int32_t>);
    case dtype::u32:
      return run(unwritten_raw<std::uint32_t>(t, pattern), as_double<std::uint32_t>);
    case dtype::i8:
      return run(unwritten_raw<std::int8_t>(t, pattern), as_double<std::int8_t>);
    case dtype::u8:
      return run(unwritten_raw<std::uint8_t>(t, pattern), as_double<std::uint8_t>);
  }
}

void merge_errors(output_errors& e, const output_errors& part) {
  e.max_abs = std::max(e.max_abs, part.max_abs);
  e.max_rel = std::max(e.max_rel, part.max_rel);
  e.compared += part.compared;
  e.unwritten += part.unwritten;
  e.wrong += part.wrong;
  e.first_wrong = std::min(e.first_wrong, part.first_wrong);
  e.sum_sq_diff += part.sum_sq_diff;
  e.sum_sq_ref += part.sum_sq_ref;
  e.ref_near_zero += part.ref_near_zero;
  e.ref_not_finite += part.ref_not_finite;
}

double norm_relative_error(const output_errors& e) {
  if (e.sum_sq_diff == 0) return 0;
  if (e.sum_sq_ref == 0) return std::numeric_limits<double>::infinity();
  return std::sqrt(e.sum_sq_diff / e.sum_sq_ref);
}

double near_zero_share(const output_errors& e) {
  return e.compared ? double(e.ref_near_zero) / double(e.compared) : 0.0;
}

double not_finite_share(const output_errors& e) {
  return e.compared ? double(e.ref_not_finite) / double(e.compared) : 0.0;
}

bool fails_norm_test(const output_errors& e, double rtol) {
  return norm_relative_error(e) > rtol;
}

}  // namespace kernelscan

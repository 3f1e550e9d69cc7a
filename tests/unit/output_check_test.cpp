// The verification arithmetic of the GPU engine: tolerances, relative error, unwritten
// elements, NaN and infinities, and the f16/bf16 decoding the comparison reads outputs with.
#include "engine/output_check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace kernelscan {
namespace {

output_errors compare_f32(const std::vector<float>& out, const std::vector<float>& ref,
                          double atol = 1e-4, double rtol = 1e-4) {
  output_errors e;
  compare_outputs(dtype::f32, out.data(), ref.data(), std::int64_t(out.size()), 0, atol, rtol, e);
  return e;
}

TEST(OutputCheck, DecodesHalfAndBfloat16) {
  EXPECT_EQ(decode_f16(0x3c00), 1.0);
  EXPECT_EQ(decode_f16(0xc000), -2.0);
  EXPECT_EQ(decode_f16(0x7bff), 65504.0);
  EXPECT_EQ(decode_f16(0x0001), std::ldexp(1.0, -24));  // smallest subnormal
  EXPECT_TRUE(std::isinf(decode_f16(0x7c00)));
  EXPECT_TRUE(std::isnan(decode_f16(0x7e00)));
  EXPECT_EQ(decode_bf16(0x3f80), 1.0);
  EXPECT_EQ(decode_bf16(0xc040), -3.0);
  EXPECT_TRUE(std::isnan(decode_bf16(0x7fc0)));
}

TEST(OutputCheck, PassesWithinAtolPlusRtolTimesTheReference) {
  const auto e = compare_f32({1.00005f, 100.009f, 0.0f}, {1.0f, 100.0f, 0.00005f});
  EXPECT_EQ(e.wrong, 0u);
  EXPECT_EQ(e.compared, 3u);
  EXPECT_NEAR(e.max_abs, 0.009, 1e-5);
  // max_rel <= rtol exactly where elements pass.
  EXPECT_LE(e.max_rel, 1e-4);
}

TEST(OutputCheck, CountsWrongElementsAndTheFirst) {
  const auto e = compare_f32({1, 2, 3.1f, 4, 5.5f}, {1, 2, 3, 4, 5});
  EXPECT_EQ(e.wrong, 2u);
  EXPECT_EQ(e.first_wrong, 2u);
  EXPECT_NEAR(e.max_abs, 0.5, 1e-6);
  EXPECT_GT(e.max_rel, 1e-4);
  EXPECT_EQ(e.unwritten, 0u);
}

TEST(OutputCheck, ANanLeftInTheOutputIsUnwritten) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const auto e = compare_f32({1, nan, nan}, {1, 2, nan});
  EXPECT_EQ(e.unwritten, 1u);  // the third: the reference made NaN too
  EXPECT_EQ(e.wrong, 1u);
  EXPECT_EQ(e.first_wrong, 1u);
}

TEST(OutputCheck, InfinitiesMustMatch) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(compare_f32({inf}, {inf}).wrong, 0u);
  EXPECT_EQ(compare_f32({1e30f}, {inf}).wrong, 1u);
  EXPECT_EQ(compare_f32({-inf}, {inf}).wrong, 1u);
  EXPECT_TRUE(std::isinf(compare_f32({1}, {inf}).max_abs));
}

TEST(OutputCheck, OffsetsCountFromTheWholeBuffer) {
  output_errors e;
  const std::vector<float> ok{1, 2}, bad{1, 3};
  compare_outputs(dtype::f32, ok.data(), ok.data(), 2, 0, 1e-4, 1e-4, e);
  compare_outputs(dtype::f32, bad.data(), ok.data(), 2, 2, 1e-4, 1e-4, e);
  EXPECT_EQ(e.compared, 4u);
  EXPECT_EQ(e.first_wrong, 3u);
}

TEST(OutputCheck, PiecesComparedApartMergeIntoTheWhole) {
  std::vector<float> ref(10000), out(10000);
  for (std::size_t i = 0; i < ref.size(); ++i) {
    ref[i] = float(i % 97) - 40.5f;
    out[i] = ref[i] * (i % 7 ? 1.00001f : 1.0f);
  }
  out[4321] = std::numeric_limits<float>::quiet_NaN();  // unwritten
  out[7777] += 1;                                       // wrong
  out[9000] += 2;
  const output_errors whole = compare_f32(out, ref);
  output_errors merged;
  // The last piece first: the order of the merges changes nothing but the sums' rounding.
  for (const std::int64_t start : {9000, 0, 3333, 5000}) {
    const std::int64_t end = start == 9000   ? 10000
                             : start == 0    ? 3333
                             : start == 3333 ? 5000
                                             : 9000;
    output_errors part;
    compare_outputs(dtype::f32, out.data() + start, ref.data() + start, end - start,
                    std::uint64_t(start), 1e-4, 1e-4, part);
    merge_errors(merged, part);
  }
  EXPECT_EQ(merged.compared, whole.compared);
  EXPECT_EQ(merged.unwritten, 1u);
  EXPECT_EQ(merged.wrong, whole.wrong);
  EXPECT_EQ(merged.wrong, 3u);
  EXPECT_EQ(merged.first_wrong, 4321u);
  EXPECT_EQ(merged.max_abs, whole.max_abs);
  EXPECT_EQ(merged.max_rel, whole.max_rel);
  EXPECT_EQ(merged.ref_near_zero, whole.ref_near_zero);
  EXPECT_NEAR(merged.sum_sq_diff, whole.sum_sq_diff, 1e-12 * whole.sum_sq_diff);
  EXPECT_NEAR(merged.sum_sq_ref, whole.sum_sq_ref, 1e-12 * whole.sum_sq_ref);
  EXPECT_GT(merged.sum_sq_diff, 0);
}

TEST(OutputCheck, IntegersCompareExactlyAndUseTheBytePattern) {
  std::int32_t unwritten;
  std::memset(&unwritten, k_unwritten_byte, sizeof unwritten);
  const std::vector<std::int32_t> out{5, unwritten, 7}, ref{5, 6, 8};
  output_errors e;
  compare_outputs(dtype::i32, out.data(), ref.data(), 3, 0, 0, 0, e);
  EXPECT_EQ(e.unwritten, 1u);
  EXPECT_EQ(e.wrong, 2u);
  EXPECT_EQ(e.max_abs, 1.0);
}

// 64-bit integers are compared as doubles, converted as double(v) converts them (rounded once)
// also where the comparison converts them from their 32-bit halves: at the ends of the range,
// at 2^53 and where rounding to the nearest double ties, and in both halves' sign bits.
TEST(OutputCheck, SixtyFourBitIntegersConvertAsADoubleDoes) {
  constexpr std::int64_t lowest = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t highest = std::numeric_limits<std::int64_t>::max();
  const std::vector<std::int64_t> values{lowest,
                                         lowest + 1,
                                         highest,
                                         highest - 511,
                                         highest - 512,
                                         highest - 1535,
                                         -1,
                                         0,
                                         1,
                                         (std::int64_t(1) << 53) + 1,
                                         -(std::int64_t(1) << 53) - 1,
                                         (std::int64_t(1) << 54) + 2,
                                         (std::int64_t(1) << 54) + 6,
                                         std::int64_t(0x00000000ffffffffll),
                                         std::int64_t(0x0000000080000000ll),
                                         std::int64_t(0x7fffffff80000001ll),
                                         std::int64_t(0xffffffff00000000ull),
                                         std::int64_t(0x80000000ffffffffull),
                                         std::int64_t(0xfedcba9876543210ull)};
  for (const std::int64_t v : values) {
    SCOPED_TRACE(std::to_string(v));
    const double want = double(v);
    // Alone, it passes against itself (the vectorised path, its square the reference's sum),
    // and against 0 its difference is the largest error (the element-by-element path).
    output_errors same, apart;
    compare_outputs(dtype::i64, &v, &v, 1, 0, 0, 0, same);
    EXPECT_EQ(same.wrong, 0u);
    EXPECT_EQ(same.sum_sq_ref, want * want);
    const std::int64_t zero = 0;
    compare_outputs(dtype::i64, &zero, &v, 1, 0, 0, 0, apart);
    EXPECT_EQ(apart.max_abs, v ? std::fabs(want) : 0.0);
  }
}

TEST(OutputCheck, HalfPrecisionOutputsAtTheirTolerance) {
  // 1.0 and 1.0078125 (the next bf16 after 1) pass at bf16's 1e-2; 1.0 and 1.0625 do not.
  const std::vector<std::uint16_t> out{0x3f80, 0x3f81, 0x3f88}, ref{0x3f80, 0x3f80, 0x3f80};
  output_errors e;
  compare_outputs(dtype::bf16, out.data(), ref.data(), 3, 0, 1e-2, 1e-2, e);
  EXPECT_EQ(e.wrong, 1u);
  EXPECT_EQ(e.first_wrong, 2u);
}

// The comparison, decoded per type in one loop, agrees with the element-wise definition
// (load_element, holds_unwritten) on every dtype and both unwritten patterns: random bytes,
// elements equal to the reference, close to it, unwritten, NaN and infinite ones. The first
// stretch passes throughout but for one unwritten element, so that the vectorised blocks where
// every element passes and a block where one does not are both checked; their sums may differ
// from one-at-a-time sums only by rounding.
TEST(OutputCheck, EveryDtypeAgreesWithTheElementWiseDefinition) {
  std::uint64_t state = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (dtype t : {dtype::f64, dtype::f32, dtype::f16, dtype::bf16, dtype::i64, dtype::i32,
                  dtype::u32, dtype::i8, dtype::u8}) {
    for (int pattern : {0, 1}) {
      SCOPED_TRACE(std::string(to_string(t)) + " pattern " + std::to_string(pattern));
      constexpr std::int64_t n = 9000, passing = 5000, lone_unwritten = 2047;
      const std::size_t w = size_of(t);
      std::vector<unsigned char> out(n * w), ref(n * w);
      for (std::int64_t i = 0; i < n; ++i) {
        unsigned char* o = out.data() + std::size_t(i) * w;
        unsigned char* r = ref.data() + std::size_t(i) * w;
        const double v = double(std::int64_t(next() % 2001) - 1000) / 8;
        store_element(t, v, r);
        const std::uint64_t kind =
            i == lone_unwritten ? 2 : (i < passing ? next() % 2 : next() % 6);
        switch (kind) {
          case 0:
            std::memcpy(o, r, w);
            break;
          case 1:
            store_element(t, v * (1 + 1e-5), o);
            break;
          case 2:
            store_unwritten(t, o, pattern);
            break;
          case 3:
            store_element(t, std::numeric_limits<double>::infinity(), o);
            break;
          case 4:
            store_unwritten(t, r, pattern);  // the reference unwritten (NaN) too
            store_unwritten(t, o, pattern);
            break;
          default:
            for (std::size_t b = 0; b < w; ++b)
              o[b] = static_cast<unsigned char>(next());
        }
      }
      output_errors fast;
      compare_outputs(t, out.data(), ref.data(), n, 100, 1e-3, 1e-3, fast, pattern);
      // The definition, element by element.
      output_errors e;
      const double atol = 1e-3, rtol = 1e-3, floor = atol / rtol;
      for (std::int64_t i = 0; i < n; ++i) {
        const unsigned char* o = out.data() + std::size_t(i) * w;
        const unsigned char* r = ref.data() + std::size_t(i) * w;
        const double ov = load_element(t, o), rv = load_element(t, r);
        ++e.compared;
        if (std::fabs(rv) <= atol) ++e.ref_near_zero;
        bool bad = false;
        if (holds_unwritten(t, o, pattern) && !holds_unwritten(t, r, pattern)) {
          ++e.unwritten;
          bad = true;
        } else if (ov == rv || (std::isnan(ov) && std::isnan(rv))) {
        } else if (!std::isfinite(ov) || !std::isfinite(rv)) {
          bad = true;
          e.max_abs = e.max_rel = std::numeric_limits<double>::infinity();
        } else {
          const double d = std::fabs(ov - rv);
          e.sum_sq_diff += d * d;
          e.max_abs = std::max(e.max_abs, d);
          e.max_rel = std::max(e.max_rel, d / (std::fabs(rv) + floor));
          bad = !(d <= atol + rtol * std::fabs(rv));
        }
        if (std::isfinite(rv)) e.sum_sq_ref += rv * rv;
        if (bad) {
          ++e.wrong;
          e.first_wrong = std::min(e.first_wrong, 100 + std::uint64_t(i));
        }
      }
      EXPECT_GT(e.wrong, 0u);
      EXPECT_EQ(fast.compared, e.compared);
      EXPECT_EQ(fast.ref_near_zero, e.ref_near_zero);
      EXPECT_EQ(fast.unwritten, e.unwritten);
      EXPECT_EQ(fast.wrong, e.wrong);
      EXPECT_EQ(fast.first_wrong, e.first_wrong);
      EXPECT_EQ(fast.max_abs, e.max_abs);
      EXPECT_EQ(fast.max_rel, e.max_rel);
      // Equal (infinite where a random f64's square overflowed), or apart by rounding.
      auto rounding_apart = [](double a, double b) {
        return a == b || std::fabs(a - b) <= 1e-12 * std::fabs(b);
      };
      EXPECT_PRED2(rounding_apart, fast.sum_sq_diff, e.sum_sq_diff);
      EXPECT_PRED2(rounding_apart, fast.sum_sq_ref, e.sum_sq_ref);
      EXPECT_GT(e.sum_sq_diff, 0);

      // The same answer kept masked, its bytes placed across a period of the pad and off the
      // pad's word boundaries: unmasked as it is compared, it finds exactly the same.
      const std::uint64_t at = (std::uint64_t(8) << answer_mask::k_pad_bits) - 4099 * w;
      const answer_mask mask(0x5eed ^ std::uint64_t(t));
      std::vector<unsigned char> kept = ref;
      mask.apply(kept.data(), kept.size(), at, 3);
      ASSERT_NE(kept, ref);
      const std::vector<unsigned char> kept_before = kept;
      const masked_answer masked{&mask, 3, at};
      output_errors unmasked;
      compare_outputs(t, out.data(), kept.data(), n, 100, 1e-3, 1e-3, unmasked, pattern, &masked);
      EXPECT_EQ(kept, kept_before);  // read, not unmasked in place
      EXPECT_EQ(unmasked.compared, fast.compared);
      EXPECT_EQ(unmasked.ref_near_zero, fast.ref_near_zero);
      EXPECT_EQ(unmasked.unwritten, fast.unwritten);
      EXPECT_EQ(unmasked.wrong, fast.wrong);
      EXPECT_EQ(unmasked.first_wrong, fast.first_wrong);
      EXPECT_EQ(unmasked.max_abs, fast.max_abs);
      EXPECT_EQ(unmasked.max_rel, fast.max_rel);
      EXPECT_EQ(unmasked.sum_sq_diff, fast.sum_sq_diff);
      EXPECT_EQ(unmasked.sum_sq_ref, fast.sum_sq_ref);
      // Under another buffer's stream the answer unmasks as noise.
      output_errors noise;
      const masked_answer wrong_buffer{&mask, 4, at};
      compare_outputs(t, out.data(), kept.data(), n, 100, 1e-3, 1e-3, noise, pattern,
                      &wrong_buffer);
      EXPECT_GT(noise.wrong, fast.wrong);
    }
  }
}

}  // namespace
}  // namespace kernelscan

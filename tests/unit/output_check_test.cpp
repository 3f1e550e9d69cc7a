// The verification arithmetic of the GPU engine: tolerances, relative error, unwritten
// elements, NaN and infinities, and the f16/bf16 decoding the comparison reads outputs with.
#include "engine/output_check.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
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

TEST(OutputCheck, HalfPrecisionOutputsAtTheirTolerance) {
  // 1.0 and 1.0078125 (the next bf16 after 1) pass at bf16's 1e-2; 1.0 and 1.0625 do not.
  const std::vector<std::uint16_t> out{0x3f80, 0x3f81, 0x3f88}, ref{0x3f80, 0x3f80, 0x3f80};
  output_errors e;
  compare_outputs(dtype::bf16, out.data(), ref.data(), 3, 0, 1e-2, 1e-2, e);
  EXPECT_EQ(e.wrong, 1u);
  EXPECT_EQ(e.first_wrong, 2u);
}

}  // namespace
}  // namespace kernelscan

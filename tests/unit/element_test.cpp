#include "engine/element.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "engine/fill_pattern.hpp"

namespace kernelscan {
namespace {

TEST(Element, F16RoundsToNearestEvenAndDecodesBack) {
  EXPECT_EQ(encode_f16(1.0f), 0x3c00);
  EXPECT_EQ(encode_f16(-2.0f), 0xc000);
  EXPECT_EQ(encode_f16(65504.0f), 0x7bff);                      // the largest finite
  EXPECT_EQ(encode_f16(65520.0f), 0x7c00);                      // halfway rounds to infinity
  EXPECT_EQ(encode_f16(std::ldexp(1.0f, -24)), 0x0001);         // the smallest subnormal
  EXPECT_EQ(encode_f16(std::ldexp(1.0f, -25)), 0x0000);         // halfway to 0: even
  EXPECT_EQ(encode_f16(std::ldexp(3.0f, -25)), 0x0002);         // halfway 1..2: even
  EXPECT_EQ(encode_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // halfway, even below
  EXPECT_EQ(encode_f16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // halfway, even above
  EXPECT_EQ(encode_f16(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(decode_f16(encode_f16(std::nanf("")))));
  // Every finite f16 survives a round trip through f32.
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const double v = decode_f16(std::uint16_t(bits));
    if (!std::isfinite(v)) continue;
    ASSERT_EQ(encode_f16(float(v)), bits) << std::hex << bits;
  }
}

// The branch-free decoding the output comparison vectorises is decode_f16 for all 65,536 values:
// subnormals, infinities, NaN (any payload, either sign) and negative zero included.
TEST(Element, TheBranchFreeF16DecodingIsDecodeF16) {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const double want = decode_f16(std::uint16_t(bits));
    const float got = f16_to_float(std::uint16_t(bits));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << std::hex << bits;
    } else {
      ASSERT_EQ(double(got), want) << std::hex << bits;
      ASSERT_EQ(std::signbit(got), std::signbit(want)) << std::hex << bits;
    }
  }
}

TEST(Element, Bf16RoundsToNearestEven) {
  EXPECT_EQ(encode_bf16(1.0f), 0x3f80);
  EXPECT_EQ(encode_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // halfway, even below
  EXPECT_EQ(encode_bf16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);  // halfway, even above
  EXPECT_TRUE(std::isnan(decode_bf16(encode_bf16(std::nanf("")))));
  EXPECT_EQ(decode_bf16(encode_bf16(-3.5f)), -3.5);
}

TEST(Element, IntegersTakeADoubleAsACastDoesSaturatingOutOfRange) {
  unsigned char b[8];
  store_element(dtype::i32, -7.9, b);
  EXPECT_EQ(load_element(dtype::i32, b), -7);
  store_element(dtype::u8, 300, b);
  EXPECT_EQ(load_element(dtype::u8, b), 255);
  store_element(dtype::i8, -1000, b);
  EXPECT_EQ(load_element(dtype::i8, b), -128);
  store_element(dtype::i64, 1e30, b);
  EXPECT_EQ(load_element(dtype::i64, b), double(std::numeric_limits<std::int64_t>::max()));
}

TEST(Element, BothUnwrittenPatternsAreNanOrRepeatedBytes) {
  for (dtype t : {dtype::f64, dtype::f32, dtype::f16, dtype::bf16, dtype::i64, dtype::i32,
                  dtype::u32, dtype::i8, dtype::u8}) {
    unsigned char zero[8] = {}, one[8] = {};
    store_unwritten(t, zero, 0);
    store_unwritten(t, one, 1);
    EXPECT_TRUE(holds_unwritten(t, zero, 0)) << to_string(t);
    EXPECT_TRUE(holds_unwritten(t, one, 1)) << to_string(t);
    // The two differ in their bits: a kernel cannot treat one constant as "not yet written".
    EXPECT_NE(std::memcmp(zero, one, size_of(t)), 0) << to_string(t);
    if (!is_floating(t)) {
      for (std::size_t i = 0; i < size_of(t); ++i) {
        EXPECT_EQ(zero[i], k_unwritten_byte);
        EXPECT_EQ(one[i], k_unwritten_byte_alt);
      }
      // An integer output that still holds the other run's poison was not written in this one.
      EXPECT_FALSE(holds_unwritten(t, zero, 1)) << to_string(t);
    } else {
      EXPECT_TRUE(std::isnan(load_element(t, one))) << to_string(t);
    }
    store_element(t, 1, zero);
    EXPECT_FALSE(holds_unwritten(t, zero, 0)) << to_string(t);
  }
}

TEST(FillPattern, RandomValuesAreSeededSmallAndTypedAsDefined) {
  std::vector<float> a(1000), b(1000), c(1000);
  fill_host({fill_kind::random, dtype::f32, 1000, 42, 0}, a.data());
  fill_host({fill_kind::random, dtype::f32, 1000, 42, 0}, b.data());
  fill_host({fill_kind::random, dtype::f32, 1000, 43, 0}, c.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (float v : a) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
  // Element 0 as the formula gives it: u = (r >> 40)·2^-24, v = 2u - 1.
  const std::uint64_t r = mix64(42 ^ mix64(0));
  EXPECT_EQ(a[0], 2.0f * (float(r >> 40) / 16777216.0f) - 1.0f);
  std::vector<std::int32_t> ints(1000);
  fill_host({fill_kind::random, dtype::i32, 1000, 42, 0}, ints.data());
  for (auto v : ints) {
    EXPECT_GE(v, -8);
    EXPECT_LT(v, 8);
  }
  std::vector<std::uint16_t> halves(4);
  fill_host({fill_kind::arange, dtype::f16, 4, 0, 0}, halves.data());
  EXPECT_EQ(decode_f16(halves[3]), 3.0);
  fill_host({fill_kind::value, dtype::f16, 4, 0, 0.5}, halves.data());
  EXPECT_EQ(decode_f16(halves[1]), 0.5);
}

}  // namespace
}  // namespace kernelscan

#include "engine/units.hpp"

#include <gtest/gtest.h>

#include <type_traits>

namespace kernelscan::units {
namespace {

// Dimensions combine as the formulas say; these fail to compile if they do not.
static_assert(std::is_same_v<decltype(flop / second), flop_rate>);
static_assert(std::is_same_v<decltype(byte / second), byte_rate>);
static_assert(std::is_same_v<decltype(flop / byte), intensity>);
static_assert(std::is_same_v<decltype(tflop_per_s / gb_per_s), intensity>);
static_assert(std::is_same_v<decltype(intensity{} * byte_rate{}), flop_rate>);
static_assert(std::is_same_v<decltype(flops{} / flop_rate{}), seconds>);
static_assert(std::is_same_v<decltype(seconds{} / seconds{}), double>);

template <class A, class B>
concept addable = requires(A a, B b) {
  a + b;
};
static_assert(addable<seconds, seconds>);
static_assert(!addable<seconds, flop_rate>, "a time plus a rate must not compile");
static_assert(!addable<bytes, flops>);

TEST(Units, ConvertBetweenThePrefixesPeopleRead) {
  EXPECT_DOUBLE_EQ(tflops(1.5).in(tflop_per_s), 1.5);
  EXPECT_DOUBLE_EQ(tflops(1.5).base_value(), 1.5e12);
  EXPECT_DOUBLE_EQ(gbps(5300).in(tb_per_s), 5.3);
  EXPECT_DOUBLE_EQ(microseconds(250).in(second), 250e-6);
}

TEST(Units, RooflineArithmeticKeepsDimensions) {
  // 2·4096³ FLOP in 100 µs is 1374.4 TFLOP/s.
  const flops work = flop * (2.0 * 4096 * 4096 * 4096);
  EXPECT_NEAR((work / microseconds(100)).in(tflop_per_s), 1374.39, 0.01);
  // The ridge point of a 1307 TFLOP/s, 5.3 TB/s part: 246.6 FLOP/B.
  EXPECT_NEAR((tflops(1307) / gbps(5300)).in(flop_per_byte), 246.6, 0.1);
  // At intensity 10 the memory roof is 53 TFLOP/s.
  EXPECT_NEAR((flop_per_byte * 10 * gbps(5300)).in(tflop_per_s), 53.0, 1e-9);
  // Time to move 1 GB at 5.3 TB/s: 188.7 µs.
  EXPECT_NEAR((byte * 1e9 / gbps(5300)).in(microsecond), 188.68, 0.01);
  EXPECT_LT(microseconds(1), microseconds(2));
}

TEST(Units, FormatWithSiPrefixes) {
  EXPECT_EQ(format(tflops(1307)), "1.31 PFLOP/s");
  EXPECT_EQ(format(tflops(1.25)), "1.25 TFLOP/s");
  EXPECT_EQ(format(gbps(850)), "850 GB/s");
  EXPECT_EQ(format(gbps(999.7)), "1 TB/s");
  EXPECT_EQ(format(microseconds(12.5)), "12.5 \u00b5s");
  EXPECT_EQ(format(microseconds(2500)), "2.5 ms");
  EXPECT_EQ(format(seconds::base(3)), "3 s");
  EXPECT_EQ(format(flop_per_byte * 3.2), "3.2 FLOP/B");
  EXPECT_EQ(format(bytes{}), "0 B");
  EXPECT_EQ(format(byte * 256e6), "256 MB");
}

}  // namespace
}  // namespace kernelscan::units

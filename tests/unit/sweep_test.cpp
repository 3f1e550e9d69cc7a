#include "engine/sweep.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

namespace kernelscan {
namespace {

std::vector<std::int64_t> range(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < n; ++i)
    out.push_back(i);
  return out;
}

TEST(Sweep, SizeIsTheProductOfValueCounts) {
  const sweep s({{"M", {1, 2, 3}}, {"N", {10, 20}}, {"K", {5, 6, 7, 8}}});
  EXPECT_EQ(s.size(), 24u);
  EXPECT_EQ(s.names(), (std::vector<std::string>{"M", "N", "K"}));
  ASSERT_EQ(s.parameters().size(), 3u);
  EXPECT_EQ(s.parameters()[2].values, (std::vector<std::int64_t>{5, 6, 7, 8}));
  EXPECT_EQ(sweep({{"M", {42}}}).size(), 1u);
}

TEST(Sweep, EmptySweepIsOnePoint) {
  const sweep s;
  EXPECT_EQ(s.size(), 1u);
  EXPECT_TRUE(s.names().empty());
  EXPECT_TRUE(s.point(0).empty());
  std::vector<double> values{1.0, 2.0};
  s.point_values(0, values);
  EXPECT_TRUE(values.empty());

  const sweep constructed(std::vector<sweep_parameter>{});
  EXPECT_EQ(constructed.size(), 1u);
}

TEST(Sweep, ParameterWithoutValuesGivesNoPoints) {
  EXPECT_EQ(sweep({{"M", {1, 2, 3}}, {"N", {}}}).size(), 0u);
  EXPECT_EQ(sweep({{"N", {}}, {"M", {1, 2, 3}}}).size(), 0u);
}

TEST(Sweep, RowMajorOrderLastParameterFastest) {
  const sweep s({{"A", {1, 2}}, {"B", {10, 20, 30}}});
  ASSERT_EQ(s.size(), 6u);
  const std::vector<std::vector<std::int64_t>> expected{{1, 10}, {1, 20}, {1, 30},
                                                        {2, 10}, {2, 20}, {2, 30}};
  for (std::uint64_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s.point(i), expected[i]) << "point " << i;
  }
}

TEST(Sweep, ThreeParametersEnumerateEveryCombinationOnce) {
  const sweep s({{"A", {0, 1}}, {"B", {0, 1, 2}}, {"C", {0, 1, 2, 3}}});
  ASSERT_EQ(s.size(), 24u);
  for (std::uint64_t i = 0; i < s.size(); ++i) {
    const auto p = s.point(i);
    // Values equal their positions, so the point is the mixed-radix digits of its index.
    EXPECT_EQ(std::uint64_t(p[0] * 12 + p[1] * 4 + p[2]), i);
  }
}

TEST(Sweep, PointValuesMatchesPoint) {
  const sweep s({{"M", {128, 256, 512}}, {"N", {-3, 7}}, {"K", {1, 9007199254740992LL}}});
  std::vector<double> values;
  for (std::uint64_t i = 0; i < s.size(); ++i) {
    const auto p = s.point(i);
    s.point_values(i, values);
    ASSERT_EQ(values.size(), p.size());
    for (std::size_t j = 0; j < p.size(); ++j) {
      EXPECT_EQ(values[j], double(p[j])) << "point " << i << " parameter " << j;
    }
  }
  // A reused buffer of another size is resized.
  values.assign(10, -1.0);
  s.point_values(5, values);
  EXPECT_EQ(values, (std::vector<double>{256, -3, 9007199254740992.0}));
}

TEST(Sweep, SizeSaturatesInsteadOfOverflowing) {
  const auto big = range(65536);
  // 2^16^3 = 2^48 fits; a fourth factor would make exactly 2^64, which does not.
  EXPECT_EQ(sweep({{"A", big}, {"B", big}, {"C", big}}).size(), 1ull << 48);
  const sweep s({{"A", big}, {"B", big}, {"C", big}, {"D", big}});
  EXPECT_EQ(s.size(), std::numeric_limits<std::uint64_t>::max());
  // More factors after saturation keep it saturated.
  const sweep more({{"A", big}, {"B", big}, {"C", big}, {"D", big}, {"E", {1, 2}}});
  EXPECT_EQ(more.size(), std::numeric_limits<std::uint64_t>::max());
  // An empty parameter still means no points, even after saturation.
  const sweep none({{"A", big}, {"B", big}, {"C", big}, {"D", big}, {"E", {}}});
  EXPECT_EQ(none.size(), 0u);
}

TEST(Sweep, PointsOfALargeSweepFollowFromTheIndexAlone) {
  const auto big = range(1000);
  const sweep s({{"A", big}, {"B", big}, {"C", big}});
  EXPECT_EQ(s.size(), 1000000000u);
  EXPECT_EQ(s.point(123456789), (std::vector<std::int64_t>{123, 456, 789}));
  EXPECT_EQ(s.point(s.size() - 1), (std::vector<std::int64_t>{999, 999, 999}));
}

}  // namespace
}  // namespace kernelscan

#include "server/detail/comma_list.hpp"

#include <gtest/gtest.h>

namespace kernelscan::detail {
namespace {

using views = std::vector<std::string_view>;

TEST(CommaList, SplitsKeepingEmptyAndUntrimmedItems) {
  EXPECT_EQ(split_commas("gzip, deflate, br"), (views{"gzip", " deflate", " br"}));
  EXPECT_EQ(split_commas("a,,b,"), (views{"a", "", "b", ""}));
  EXPECT_EQ(split_commas(""), (views{""}));
  EXPECT_EQ(split_commas("queued"), (views{"queued"}));
}

TEST(CommaList, TrimsSpacesOnly) {
  EXPECT_EQ(trim_spaces("  W/\"x\"  "), "W/\"x\"");
  EXPECT_EQ(trim_spaces("   "), "");
  EXPECT_EQ(trim_spaces("\tbr"), "\tbr");
}

}  // namespace
}  // namespace kernelscan::detail

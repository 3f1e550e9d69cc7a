#include "engine/text_list.hpp"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kernelscan {
namespace {

TEST(CommaJoined, SeparatesEveryItemEvenAnEmptyOne) {
  EXPECT_EQ(comma_joined(std::vector<std::string>{}), "");
  EXPECT_EQ(comma_joined(std::vector<std::string>{"a"}), "a");
  EXPECT_EQ(comma_joined(std::vector<std::string>{"", "b", "c"}), ", b, c");
}

TEST(CommaJoined, TakesViewsCStringsAndSetsInTheirOrder) {
  constexpr std::array<const char*, 2> c_strings{"x", "y"};
  EXPECT_EQ(comma_joined(c_strings), "x, y");
  EXPECT_EQ(comma_joined(std::vector<std::string_view>{"p", "q"}), "p, q");
  EXPECT_EQ(comma_joined(std::set<std::string>{"b", "a"}), "a, b");
}

}  // namespace
}  // namespace kernelscan

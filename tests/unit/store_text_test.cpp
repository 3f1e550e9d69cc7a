#include "storage/detail/store_text.hpp"

#include <gtest/gtest.h>

namespace kernelscan::detail {
namespace {

TEST(StoreText, LabelsSurviveAnyBytes) {
  const std::map<std::string, std::string> labels{
      {"team", "perf"}, {"a:b", "1:2"}, {"", "empty key"}, {"quote\"", std::string("\0x", 2)}};
  EXPECT_EQ(decode_labels(encode_labels(labels)), labels);
  EXPECT_TRUE(decode_labels("").empty());
  EXPECT_TRUE(decode_labels("9:short").empty());  // truncated: nothing made up
}

TEST(StoreText, FlagsJoinAndSplit) {
  EXPECT_EQ(join_flags({}), "");
  EXPECT_EQ(join_flags({"a", "b_c"}), "a,b_c");
  EXPECT_EQ(split_flags("a,b_c"), (std::vector<std::string>{"a", "b_c"}));
  EXPECT_TRUE(split_flags("").empty());
  EXPECT_EQ(split_flags("a,,b"), (std::vector<std::string>{"a", "b"}));
}

TEST(StoreText, EnginesByName) {
  EXPECT_EQ(parse_engine("mock"), engine_kind::mock);
  EXPECT_EQ(parse_engine("hip"), engine_kind::hip);
  EXPECT_EQ(parse_engine("import"), engine_kind::imported);
  EXPECT_EQ(parse_engine("auto"), engine_kind::any);
}

TEST(StoreText, ACacheHitIsTheLastMember) {
  EXPECT_EQ(with_cache_hit(R"({"index":3})", 7), R"({"index":3,"cache":{"hit":true,"job_id":7}})");
  EXPECT_EQ(with_cache_hit("{}", 1), R"({"cache":{"hit":true,"job_id":1}})");
  EXPECT_EQ(with_cache_hit("not json", 1), "not json");
}

}  // namespace
}  // namespace kernelscan::detail

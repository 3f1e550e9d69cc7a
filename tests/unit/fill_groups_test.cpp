// How fill_all()'s targets are grouped for a backend that fills several buffers in one command
// (group_fills, device_backend.hpp): what shares a command, what does not, and runs of at most
// the command's buffers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

#include "engine/device_backend.hpp"

namespace kernelscan {
namespace {

fill_request random(dtype t, std::int64_t n, std::uint64_t seed) {
  return {fill_kind::random, t, n, seed, 0, 0};
}

std::set<const device_buffer*> buffers_of(const std::vector<const fill_target*>& targets) {
  std::set<const device_buffer*> out;
  for (const fill_target* t : targets)
    out.insert(t->buffer);
  return out;
}

fill_request unwritten(dtype t, std::int64_t n, int pattern) {
  return {fill_kind::unwritten, t, n, 0, 0, pattern};
}

TEST(FillGroups, RandomFillsOfOneTypeAndLengthShareACommandInRunsOfAtMostItsBuffers) {
  std::vector<device_buffer> buffers(12);
  std::vector<fill_target> fills;
  for (std::size_t i = 0; i < 9; ++i)
    fills.push_back({&buffers[i], random(dtype::f32, 1024, i)});
  fills.push_back({&buffers[9], random(dtype::f32, 1025, 9)});  // another length
  fills.push_back({&buffers[10], random(dtype::f64, 1024, 10)});
  fills.push_back({&buffers[11], random(dtype::f64, 1024, 11)});
  const grouped_fills g = group_fills(fills, 4);
  ASSERT_EQ(g.groups.size(), 3u);  // f32 × 1024 in 4 + 4 (the ninth alone), f64 × 1024 in 2
  std::vector<std::size_t> sizes;
  for (const auto& group : g.groups) {
    EXPECT_TRUE(group.random);
    sizes.push_back(group.members.size());
    for (const fill_target* t : group.members) {
      EXPECT_EQ(t->request.type, group.type);
      EXPECT_EQ(t->request.count, group.count);
    }
  }
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<std::size_t>{2, 4, 4}));
  // The ninth f32 × 1024, and the one of its length.
  EXPECT_EQ(buffers_of(g.single), (std::set<const device_buffer*>{&buffers[8], &buffers[9]}));
}

TEST(FillGroups, ConstantFillsShareACommandWhereTheirWordsAndLengthsInBytesAgree) {
  std::vector<device_buffer> buffers(8);
  std::vector<fill_target> fills = {
      {&buffers[0], unwritten(dtype::f32, 1024, 0)},
      {&buffers[1], unwritten(dtype::f32, 1024, 0)},
      {&buffers[2], unwritten(dtype::f32, 1024, 1)},  // the other pattern: another word
      {&buffers[3], unwritten(dtype::f32, 1023, 0)},  // 4092 bytes: not whole words
      {&buffers[4], {fill_kind::value, dtype::i32, 1024, 0, 0, 0}},
      {&buffers[5], {fill_kind::value, dtype::i8, 4096, 0, 0, 0}},  // zeros, 512 words too
      {&buffers[6], {fill_kind::arange, dtype::f32, 1024, 0, 0, 0}},
      {&buffers[7], unwritten(dtype::f32, 0, 0)},  // nothing to fill
  };
  const grouped_fills g = group_fills(fills, 8);
  ASSERT_EQ(g.groups.size(), 2u);
  for (const auto& group : g.groups) {
    EXPECT_FALSE(group.random);
    EXPECT_EQ(group.count, 1024 * 4 / 8) << "words";
    EXPECT_EQ(group.members.size(), 2u);
  }
  const auto zeros = g.groups[0].word == 0 ? g.groups[0] : g.groups[1];
  EXPECT_EQ(zeros.word, 0u);
  const auto nan = g.groups[0].word == 0 ? g.groups[1] : g.groups[0];
  EXPECT_EQ(nan.word & 0xffffffffu, nan.word >> 32) << "the element repeated over the word";
  EXPECT_EQ(nan.members[0]->buffer, &buffers[0]);
  EXPECT_EQ(nan.members[1]->buffer, &buffers[1]);
  EXPECT_EQ(buffers_of(g.single),
            (std::set<const device_buffer*>{&buffers[2], &buffers[3], &buffers[6]}));
}

}  // namespace
}  // namespace kernelscan

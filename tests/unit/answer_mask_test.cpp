// The stream the reference's answers are kept under on the host: it hides them, undoes itself,
// differs from key to key, buffer to buffer and period to period of its pad, and unmasks any
// chunk on its own, as comparisons read them.
#include "engine/answer_mask.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace kernelscan {
namespace {

std::vector<unsigned char> answer(std::size_t floats) {
  std::vector<float> v(floats);
  for (std::size_t i = 0; i < floats; ++i)
    v[i] = 0.5f * float(i % 7);  // few distinct values, many zeros: easy to spot in memory
  std::vector<unsigned char> out(floats * sizeof(float));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// 4-byte elements of `a` and `b` that are equal.
std::size_t same_elements(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b,
                          std::size_t from = 0) {
  std::size_t same = 0;
  for (std::size_t i = from; i + 4 <= a.size(); i += 4)
    same += std::memcmp(&a[i], &b[i], 4) == 0;
  return same;
}

TEST(AnswerMask, HidesTheAnswerAndUndoesItself) {
  const auto plain = answer(1000);
  auto masked = plain;
  const std::uint64_t key = random_answer_key();
  EXPECT_NE(key, 0u);
  const answer_mask mask(key);
  mask.apply(masked.data(), masked.size(), 0, 2);
  // No 4-byte element of the answer is left as it was (a chance of 1000 / 2^32).
  EXPECT_EQ(same_elements(plain, masked), 0u);
  auto back = masked;
  mask.apply(back.data(), back.size(), 0, 2);
  EXPECT_EQ(back, plain);
  // Another key, or another buffer of the same point, is another stream.
  auto other = plain;
  answer_mask(key ^ 2).apply(other.data(), other.size(), 0, 2);
  EXPECT_EQ(same_elements(other, masked), 0u);
  other = plain;
  mask.apply(other.data(), other.size(), 0, 3);
  EXPECT_EQ(same_elements(other, masked), 0u);
}

TEST(AnswerMask, ThePadDoesNotRepeatFromPeriodToPeriod) {
  // An answer of constant words over two periods of the pad: masked, the second period differs
  // from the first everywhere.
  const std::size_t period = std::size_t(8) << answer_mask::k_pad_bits;
  std::vector<unsigned char> plain(2 * period, 0x3c);
  auto masked = plain;
  answer_mask(7).apply(masked.data(), masked.size(), 0, 0);
  const std::vector<unsigned char> first(masked.begin(), masked.begin() + long(period));
  const std::vector<unsigned char> second(masked.begin() + long(period), masked.end());
  EXPECT_EQ(same_elements(first, second), 0u);
  EXPECT_EQ(same_elements(plain, masked), 0u);
}

TEST(AnswerMask, AnyChunkUnmasksOnItsOwn) {
  // Longer than a period of the pad, so that chunks cross from one period into the next.
  const std::size_t period = std::size_t(8) << answer_mask::k_pad_bits;
  const auto plain = answer(period / 4 + 777);
  auto masked = plain;
  const answer_mask mask(0x1234567);
  mask.apply(masked.data(), masked.size(), 0, 0);
  // Chunks that start and end inside the stream's 8-byte words, and across the period's end.
  for (const std::size_t at : {std::size_t(0), std::size_t(3), std::size_t(13), std::size_t(1000),
                               period - 13, period - 8, period + 5}) {
    for (const std::size_t size :
         {std::size_t(1), std::size_t(5), std::size_t(29), std::size_t(2000)}) {
      if (at + size > masked.size()) continue;
      std::vector<unsigned char> chunk(masked.begin() + long(at), masked.begin() + long(at + size));
      mask.apply(chunk.data(), chunk.size(), at, 0);
      EXPECT_TRUE(std::equal(chunk.begin(), chunk.end(), plain.begin() + long(at)))
          << "at " << at << ", " << size << " bytes";
    }
  }
}

}  // namespace
}  // namespace kernelscan

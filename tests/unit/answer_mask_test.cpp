// The keystream the reference's answers are kept under on the host: it hides them, undoes
// itself, and unmasks any chunk on its own, as comparisons read them.
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

TEST(AnswerMask, HidesTheAnswerAndUndoesItself) {
  const auto plain = answer(1000);
  auto masked = plain;
  const std::uint64_t key = random_answer_key();
  EXPECT_NE(key, 0u);
  xor_keystream(masked.data(), masked.size(), 0, key, 2);
  // No 4-byte element of the answer is left as it was (a chance of 1000 / 2^32).
  std::size_t same = 0;
  for (std::size_t i = 0; i < plain.size(); i += 4)
    same += std::memcmp(&plain[i], &masked[i], 4) == 0;
  EXPECT_EQ(same, 0u);
  auto back = masked;
  xor_keystream(back.data(), back.size(), 0, key, 2);
  EXPECT_EQ(back, plain);
  // Another key, or another buffer of the same point, is another stream.
  auto other = plain;
  xor_keystream(other.data(), other.size(), 0, key ^ 2, 2);
  EXPECT_NE(other, masked);
  other = plain;
  xor_keystream(other.data(), other.size(), 0, key, 3);
  EXPECT_NE(other, masked);
}

TEST(AnswerMask, AnyChunkUnmasksOnItsOwn) {
  const auto plain = answer(777);
  auto masked = plain;
  const std::uint64_t key = 0x1234567;
  xor_keystream(masked.data(), masked.size(), 0, key, 0);
  // Chunks that start and end inside the stream's 8-byte words.
  for (const std::size_t at :
       {std::size_t(0), std::size_t(3), std::size_t(13), std::size_t(1000)}) {
    for (const std::size_t size :
         {std::size_t(1), std::size_t(5), std::size_t(29), std::size_t(2000)}) {
      if (at + size > masked.size()) continue;
      std::vector<unsigned char> chunk(masked.begin() + long(at), masked.begin() + long(at + size));
      xor_keystream(chunk.data(), chunk.size(), at, key, 0);
      EXPECT_TRUE(std::equal(chunk.begin(), chunk.end(), plain.begin() + long(at)))
          << "at " << at << ", " << size << " bytes";
    }
  }
}

}  // namespace
}  // namespace kernelscan

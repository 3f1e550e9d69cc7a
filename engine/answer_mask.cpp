#include "engine/answer_mask.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "engine/entropy.hpp"
#include "engine/fill_pattern.hpp"

// Where clang cannot vectorise the stream's loop (a sanitizer's checks in it), it runs it all
// the same: no reason to fail the build.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpass-failed"
#endif

namespace kernelscan {
namespace {

constexpr std::uint64_t k_answer_mask_salt = 0x6d61736b616e7377;  // "maskansw"
constexpr std::uint64_t k_pad_words = std::uint64_t(1) << answer_mask::k_pad_bits;

// `word` with its bytes in little-endian order in memory, as the stream is applied.
std::uint64_t little_endian(std::uint64_t word) {
  return std::endian::native == std::endian::little ? word : __builtin_bswap64(word);
}

}  // namespace

std::uint64_t random_answer_key() {
  return entropy64() | 1;
}

answer_mask::answer_mask(std::uint64_t key) : m_key(key), m_pad(k_pad_words) {
  std::uint64_t x = mix64(key ^ k_answer_mask_salt);
  for (auto& word : m_pad) {
    x = mix64(x + k_answer_mask_salt);
    word = little_endian(x);
  }
}

std::uint64_t answer_mask::period_word(std::uint64_t period, std::size_t buffer) const {
  return little_endian(mix64(m_key ^ mix64(k_answer_mask_salt + buffer) ^ mix64(period + 1)));
}

std::vector<std::uint64_t> answer_mask::periods(std::uint64_t words, std::size_t buffer) const {
  std::vector<std::uint64_t> out((words + k_pad_words - 1) / k_pad_words);
  for (std::uint64_t p = 0; p < out.size(); ++p)
    out[p] = period_word(p, buffer);
  return out;
}

void answer_mask::apply(const unsigned char* from, unsigned char* to, std::size_t size,
                        std::uint64_t offset, std::size_t buffer) const {
  stream_into<false>(from, to, size, offset, buffer);
}

void answer_mask::keystream(unsigned char* to, std::size_t size, std::uint64_t offset,
                            std::size_t buffer) const {
  stream_into<true>(nullptr, to, size, offset, buffer);
}

template <bool FromZeros>
void answer_mask::stream_into(const unsigned char* from, unsigned char* to, std::size_t size,
                              std::uint64_t offset, std::size_t buffer) const {
  const std::uint64_t pad_mask = k_pad_words - 1;
  std::size_t i = 0;
  // Bytes one at a time from `i` up to `end`, within the word they fall in.
  const auto bytewise = [&](std::size_t end) {
    while (i < end) {
      const std::uint64_t at = offset + i;
      const std::uint64_t w = at / 8;
      const std::uint64_t word =
          m_pad[w & pad_mask] ^ period_word(w >> k_pad_bits, buffer);  // little-endian bytes
      unsigned char bytes[8];
      std::memcpy(bytes, &word, 8);
      for (std::uint64_t b = at % 8; b < 8 && i < end; ++b, ++i)
        to[i] = (FromZeros ? 0 : from[i]) ^ bytes[b];
    }
  };
  // Up to a word boundary of the answer, whole words a period of the pad at a time, then what
  // is left.
  bytewise(std::min<std::size_t>(size, (8 - offset % 8) % 8));
  while (i + 8 <= size) {
    const std::uint64_t w = (offset + i) / 8;
    const std::uint64_t period = w >> k_pad_bits;
    const std::uint64_t tweak = period_word(period, buffer);
    const std::size_t words =
        std::min<std::size_t>((size - i) / 8, std::size_t(k_pad_words - (w & pad_mask)));
    const std::uint64_t* pad = m_pad.data() + (w & pad_mask);
    unsigned char* target = to + i;
#pragma omp simd
    for (std::size_t j = 0; j < words; ++j) {
      std::uint64_t x = 0;
      if constexpr (!FromZeros) std::memcpy(&x, from + i + 8 * j, 8);
      x ^= pad[j] ^ tweak;
      std::memcpy(target + 8 * j, &x, 8);
    }
    i += 8 * words;
  }
  bytewise(size);
}

}  // namespace kernelscan

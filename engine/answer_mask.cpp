#include "engine/answer_mask.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <random>

#include "engine/fill_pattern.hpp"

namespace kernelscan {
namespace {

constexpr std::uint64_t k_answer_mask_salt = 0x6d61736b616e7377;  // "maskansw"

}  // namespace

std::uint64_t random_answer_key() {
  std::random_device entropy;
  return (std::uint64_t(entropy()) << 32 | entropy()) | 1;
}

void xor_keystream(unsigned char* data, std::size_t size, std::uint64_t offset, std::uint64_t key,
                   std::size_t buffer) {
  // Each 8 bytes of the answer have a word of the stream (little-endian byte order within it).
  const std::uint64_t stream = mix64(key ^ mix64(k_answer_mask_salt + buffer));
  std::size_t i = 0;
  const auto bytewise = [&](std::size_t end) {
    while (i < end) {
      const std::uint64_t at = offset + i;
      const std::uint64_t word = mix64(stream ^ (at / 8));
      for (std::uint64_t b = at % 8; b < 8 && i < end; ++b, ++i)
        data[i] ^= static_cast<unsigned char>(word >> (8 * b));
    }
  };
  // Up to a word boundary of the answer, whole words, then what is left.
  bytewise(std::min<std::size_t>(size, (8 - offset % 8) % 8));
  for (; i + 8 <= size; i += 8) {
    const std::uint64_t word = mix64(stream ^ ((offset + i) / 8));
    std::uint64_t x;
    std::memcpy(&x, data + i, 8);
    x ^= std::endian::native == std::endian::little ? word : __builtin_bswap64(word);
    std::memcpy(data + i, &x, 8);
  }
  bytewise(size);
}

}  // namespace kernelscan

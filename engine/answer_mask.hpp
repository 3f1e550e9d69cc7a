#pragma once
// The reference's answers as the point runner keeps them on the host: XORed with a keystream of
// a secret key, so that a kernel sharing the worker's address space (a CPU device) finds no
// plaintext answer to copy into its outputs, and one it overwrites unmasks as noise.
//
// The stream is a pad of 2^k_pad_bits random words drawn from the key, each period of the pad
// XORed with a word of its own (from the key, the buffer and the period's number): a word of the
// stream costs a load and two XORs, so masking runs at the speed of memory, where a hash per
// word would cost more than comparing the answer. Immutable after construction; thread-safe.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kernelscan {

// A key drawn from the system's entropy; never 0 (0 means "not masked").
std::uint64_t random_answer_key();

class answer_mask {
 public:
  static constexpr int k_pad_bits = 13;  // a pad of 2^13 words, 64 KiB
  explicit answer_mask(std::uint64_t key);

  // XORs bytes [offset, offset + size) of buffer `buffer`'s answer, at `data`, with their
  // stream: masks and unmasks alike, and any chunk unmasks on its own.
  void apply(unsigned char* data, std::size_t size, std::uint64_t offset,
             std::size_t buffer) const {
    apply(data, data, size, offset, buffer);
  }
  // The same from `from` into `to` (which may be `from`): one pass, where a copy and then
  // apply() would be two.
  void apply(const unsigned char* from, unsigned char* to, std::size_t size, std::uint64_t offset,
             std::size_t buffer) const;
  // The stream as a device applies it to the first `words` 64-bit words of buffer `buffer`'s
  // answer (device_backend::xor_keystream): word j is XORed with pad()[j % pad().size()] ^
  // periods(...)[j / pad().size()]. Both hold words as they lie in memory.
  const std::vector<std::uint64_t>& pad() const { return m_pad; }
  std::vector<std::uint64_t> periods(std::uint64_t words, std::size_t buffer) const;
  // The stream itself for those bytes, into `to`: what a comparison XORs the masked answer with
  // element by element as it reads it, so that no pass over the answer writes it unmasked.
  void keystream(unsigned char* to, std::size_t size, std::uint64_t offset,
                 std::size_t buffer) const;

 private:
  // The word every word of period `period` of the pad in buffer `buffer`'s stream is XORed
  // with, as it is applied to memory (bytes in little-endian order).
  std::uint64_t period_word(std::uint64_t period, std::size_t buffer) const;
  // apply(), or keystream() where `from` is null (the stream XORed with zeros).
  template <bool FromZeros>
  void stream_into(const unsigned char* from, unsigned char* to, std::size_t size,
                   std::uint64_t offset, std::size_t buffer) const;

  std::uint64_t m_key;
  std::vector<std::uint64_t> m_pad;
};

}  // namespace kernelscan

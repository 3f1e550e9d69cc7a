#pragma once
// The reference's answers as the point runner keeps them on the host: XORed with a keystream of
// a secret key, so that a kernel sharing the worker's address space (a CPU device) finds no
// plaintext answer to copy into its outputs, and one it overwrites unmasks as noise. Pure
// functions; thread-safe.

#include <cstddef>
#include <cstdint>

namespace kernelscan {

// A key drawn from the system's entropy; never 0 (0 means "not masked").
std::uint64_t random_answer_key();

// XORs bytes [offset, offset + size) of buffer `buffer`'s answer, at `data`, with their
// keystream under `key`: masks and unmasks alike, and any chunk unmasks on its own.
void xor_keystream(unsigned char* data, std::size_t size, std::uint64_t offset, std::uint64_t key,
                   std::size_t buffer);

}  // namespace kernelscan

#pragma once
// Checks a backend's batched hashes (hash_all): each is the hash() of its buffer, for lengths
// with no whole word, a tail past the last one, more words than a hash has threads, and more
// wide buffers than one read-back holds; a write queued before the batch is seen, and changes
// the hashes of its buffer alone.
// Header-only; for the backends' device tests.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "engine/device_backend.hpp"
#include "engine/fill_pattern.hpp"
#include "engine/point_kernel.hpp"

namespace kernelscan::testing {

inline void expect_hash_batches_match(device_backend& backend) {
  // More words than a hash has threads, even at a CPU device's 16 words a thread.
  constexpr std::uint64_t wide = 8 * (std::uint64_t(1) << 21) + 5;
  std::vector<device_buffer> buffers;
  for (const std::uint64_t bytes : {std::uint64_t(4096), std::uint64_t(5), wide})
    buffers.push_back(backend.allocate_guarded(bytes, k_canary_bytes));
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    std::vector<unsigned char> data(buffers[i].bytes());
    for (std::size_t j = 0; j < data.size(); ++j)
      data[j] = static_cast<unsigned char>(mix64(j ^ (i << 40)) >> 11);
    backend.write(buffers[i], 0, data.data(), data.size());
  }
  std::vector<hash_ref> refs = {{&buffers[0], 4096}, {&buffers[1], 5}, {&buffers[2], wide},
                                {&buffers[0], 4000}, {&buffers[2], 8}, {&buffers[1], 0}};
  // Wide ones past what one read-back of a batch holds (16 of the widest on OpenCL, which is 16
  // MiB or more on a CPU device).
  for (int i = 0; i < 20; ++i)
    refs.push_back({&buffers[2], wide - 8 * std::uint64_t(i)});
  std::vector<std::uint64_t> one_by_one;
  for (const auto& r : refs)
    one_by_one.push_back(backend.hash(*r.buffer, r.bytes));
  EXPECT_EQ(backend.hash_all(refs), one_by_one);
  // Lengths differ, so do their hashes.
  for (int i = 7; i < 26; ++i)
    EXPECT_NE(one_by_one[std::size_t(i)], one_by_one[std::size_t(i) - 1]) << i;

  // A fill of the first buffer's first half, queued before the batch: its hashes change, the
  // others' do not.
  const fill_request f{fill_kind::random, dtype::f32, 512, 0x5eedull, 0, 0};
  backend.fill(buffers[0], f);
  const auto after = backend.hash_all(refs);
  ASSERT_EQ(after.size(), refs.size());
  for (std::size_t i = 0; i < refs.size(); ++i) {
    if (refs[i].buffer == &buffers[0]) {
      EXPECT_NE(after[i], one_by_one[i]) << i;
    } else {
      EXPECT_EQ(after[i], one_by_one[i]) << i;
    }
  }
}

}  // namespace kernelscan::testing

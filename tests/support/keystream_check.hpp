#pragma once
// Checks a backend's xor_keystream against the answer mask's stream on the host: across periods
// of the pad, in every word it covers and nowhere else (the bytes past them, the guards).
// Header-only; for the backends' device tests.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "engine/answer_mask.hpp"
#include "engine/device_backend.hpp"
#include "engine/fill_pattern.hpp"

namespace kernelscan::testing {

inline void expect_device_keystream_is_the_masks(device_backend& backend) {
  const answer_mask mask(0xfeed);
  const std::uint64_t pad_words = mask.pad().size();
  const std::uint64_t words = 3 * pad_words + 77;
  constexpr std::uint64_t guard = 256;
  std::vector<unsigned char> data(words * 8 + 13);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<unsigned char>(mix64(i) >> 11);
  device_buffer b = backend.allocate_guarded(data.size(), guard);
  backend.write(b, 0, data.data(), data.size());
  const std::vector<unsigned char> canary(guard, 0x5a);
  backend.write_guard(b, guard_side::before, canary.data());
  backend.write_guard(b, guard_side::after, canary.data());
  device_buffer pad = backend.allocate(pad_words * 8);
  backend.write(pad, 0, mask.pad().data(), pad_words * 8);
  const auto periods = mask.periods(words, 5);
  ASSERT_EQ(periods.size(), 4u);
  device_buffer tweaks = backend.allocate(periods.size() * 8);
  backend.write(tweaks, 0, periods.data(), periods.size() * 8);
  backend.xor_keystream(b, words, pad, pad_words, tweaks);
  std::vector<unsigned char> got(data.size());
  backend.read(b, 0, got.data(), got.size());
  std::vector<unsigned char> want = data;
  mask.apply(want.data(), words * 8, 0, 5);
  EXPECT_EQ(got, want);
  std::vector<unsigned char> around(guard);
  for (const guard_side side : {guard_side::before, guard_side::after}) {
    backend.read_guard(b, side, around.data());
    EXPECT_EQ(around, canary);
  }
}

}  // namespace kernelscan::testing

#pragma once
// Checks a backend's batched canary copies (write_guards, guards_hold): every listed guard gets
// the canary, a buffer without guards is passed over (it holds), a check sees the writes queued
// before it, and exactly the guards a write changed read as changed.
// Header-only; for the backends' device tests.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "engine/device_backend.hpp"
#include "engine/fill_pattern.hpp"
#include "engine/point_kernel.hpp"

namespace kernelscan::testing {

inline void expect_guard_batches_work(device_backend& backend) {
  constexpr std::uint64_t guard = k_canary_bytes;
  std::vector<unsigned char> canary(guard);
  for (std::size_t i = 0; i < canary.size(); ++i)
    canary[i] = static_cast<unsigned char>(mix64(i ^ 0xca7a) >> 17);
  std::vector<device_buffer> buffers;
  for (const std::uint64_t bytes : {4004u, 64u, 100000u})
    buffers.push_back(backend.allocate_guarded(bytes, guard));
  const device_buffer plain = backend.allocate(256);
  std::vector<guard_ref> guards;
  for (const auto& b : buffers) {
    for (const guard_side side : {guard_side::before, guard_side::after})
      guards.push_back({&b, side});
  }
  guards.push_back({&plain, guard_side::after});
  // What was there before: zeros in every guard, the data filled.
  const std::vector<unsigned char> zeros(guard, 0);
  for (const auto& g : guards) {
    if (g.buffer->guard()) backend.write_guard(*g.buffer, g.side, zeros.data());
  }
  EXPECT_EQ(backend.guards_hold(guards, canary.data()),
            std::vector<bool>({false, false, false, false, false, false, true}));

  // The check right after the writes, which a backend may leave queued, sees them.
  backend.write_guards(guards, canary.data());
  EXPECT_EQ(backend.guards_hold(guards, canary.data()), std::vector<bool>(guards.size(), true));
  std::vector<unsigned char> got(guard);
  for (const auto& g : guards) {
    if (!g.buffer->guard()) continue;
    backend.read_guard(*g.buffer, g.side, got.data());
    EXPECT_EQ(got, canary);
  }

  // One byte changed in the trailing guard of the second buffer and the leading guard of the
  // third: those two only (a fill of the third's data, queued before the check, changes none).
  for (const std::size_t at : {std::size_t(3), std::size_t(4)}) {
    std::vector<unsigned char> changed = canary;
    changed[at == 3 ? 0 : guard - 1] ^= 0x40;
    backend.write_guard(*guards[at].buffer, guards[at].side, changed.data());
  }
  const fill_request f{fill_kind::random, dtype::f32, 25000, 0x5eedull, 0, 0};
  backend.fill(buffers[2], f);
  EXPECT_EQ(backend.guards_hold(guards, canary.data()),
            std::vector<bool>({true, true, true, false, false, true, true}));
}

}  // namespace kernelscan::testing

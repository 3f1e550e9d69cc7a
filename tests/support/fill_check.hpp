#pragma once
// Checks a backend's device fills against fill_pattern.hpp's definition, bit for bit: every
// element type, every fill kind, both unwritten patterns, and random fills of several seeds (so
// several segment lengths) over a count that is a multiple of no work-group size.
// Header-only; for the backends' device tests.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "engine/device_backend.hpp"
#include "engine/fill_pattern.hpp"

namespace kernelscan::testing {

inline void expect_device_fills_match_the_host(device_backend& backend) {
  constexpr std::int64_t n = 100003;
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::i64, dtype::i32,
                  dtype::u32, dtype::i8, dtype::u8}) {
    const std::uint64_t bytes = std::uint64_t(n) * size_of(t);
    device_buffer b = backend.allocate(bytes);
    std::vector<unsigned char> device(bytes), host(bytes);
    for (fill_kind kind :
         {fill_kind::random, fill_kind::arange, fill_kind::value, fill_kind::unwritten}) {
      const std::vector<std::uint64_t> seeds = kind == fill_kind::random
                                                   ? std::vector<std::uint64_t>{0x5eed, 1, 2, 3, 4}
                                                   : std::vector<std::uint64_t>{0x5eed};
      for (const std::uint64_t seed : seeds) {
        for (int pattern : {0, 1}) {
          SCOPED_TRACE(std::string(to_string(t)) + " fill " + std::to_string(int(kind)) + " seed " +
                       std::to_string(seed) + " pattern " + std::to_string(pattern));
          const fill_request f{kind, t, n, seed, 0.75, pattern};
          backend.fill(b, f);
          backend.read(b, 0, device.data(), bytes);
          fill_host(f, host.data());
          ASSERT_EQ(std::memcmp(device.data(), host.data(), bytes), 0);
        }
      }
    }
  }
}

}  // namespace kernelscan::testing

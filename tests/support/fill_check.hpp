#pragma once
// Checks a backend's device fills against fill_pattern.hpp's definition, bit for bit: every
// element type, every fill kind, both unwritten patterns, and random fills of several seeds (so
// several segment lengths) over a count that is a multiple of no work-group size; and fill_all()
// of many buffers at once (a batched sample's sets), whatever commands the backend groups them in.
// Header-only; for the backends' device tests.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <deque>
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

// Buffers of every type filled in one fill_all(): more random ones of one type and length than a
// command takes, lengths whose bytes are and are not whole words, guarded buffers among plain
// ones, both unwritten patterns, constants and aranges, each compared with fill_host().
inline void expect_batched_fills_match_the_host(device_backend& backend) {
  std::deque<device_buffer> buffers;
  std::vector<fill_target> targets;
  std::uint64_t seed = 0x5e7;
  auto add = [&](fill_kind kind, dtype t, std::int64_t n, int pattern = 0, double value = 0.75) {
    const std::uint64_t bytes = std::uint64_t(n) * size_of(t);
    buffers.push_back(buffers.size() % 2 ? backend.allocate_guarded(bytes, 4096)
                                         : backend.allocate(bytes));
    targets.push_back({&buffers.back(), fill_request{kind, t, n, ++seed, value, pattern}});
  };
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::i64, dtype::i32,
                  dtype::u32, dtype::i8, dtype::u8}) {
    for (int i = 0; i < 3; ++i)
      add(fill_kind::random, t, 1027);
    for (int i = 0; i < 2; ++i)
      add(fill_kind::random, t, 70001);
    for (int pattern : {0, 1, 0, 1})
      add(fill_kind::unwritten, t, 1024, pattern);
    add(fill_kind::unwritten, t, 1027, 1);
    for (int i = 0; i < 2; ++i)
      add(fill_kind::value, t, 1024);
    add(fill_kind::value, t, 1027, 0, 1);
    add(fill_kind::arange, t, 1027);
  }
  // More buffers of one group than a command takes (8 on OpenCL, 16 on HIP).
  for (int i = 0; i < 19; ++i) {
    add(fill_kind::random, dtype::f32, 4096);
    add(fill_kind::unwritten, dtype::f32, 4096, 1);
  }
  backend.fill_all(targets);
  for (const fill_target& target : targets) {
    const fill_request& f = target.request;
    SCOPED_TRACE(std::string(to_string(f.type)) + " fill " + std::to_string(int(f.kind)) +
                 " count " + std::to_string(f.count) + " pattern " + std::to_string(f.pattern));
    const std::uint64_t bytes = std::uint64_t(f.count) * size_of(f.type);
    std::vector<unsigned char> device(bytes), host(bytes);
    backend.read(*target.buffer, 0, device.data(), bytes);
    fill_host(f, host.data());
    ASSERT_EQ(std::memcmp(device.data(), host.data(), bytes), 0);
  }
}

}  // namespace kernelscan::testing

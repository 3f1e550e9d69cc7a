#pragma once
// Checks the fixed cost of a timed sample a backend shows (sample_fixed_cost_us, which the
// sampling takes off a batch held below the free one): at least 0, and less than a lone launch of
// the built-in kernel it is measured with takes in a sample, since that sample holds the fixed
// cost and a launch. Where `positive`, also more than 0 (a GPU's events cost something). Prints
// the figures. Header-only; for the backends' device tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "engine/device_backend.hpp"
#include "engine/sample_loop.hpp"

namespace kernelscan::testing {

inline void expect_a_sample_fixed_cost_below_a_lone_launch(device_backend& backend, bool positive) {
  const double fixed = sample_fixed_cost_us(backend);
  // A lone launch of the same kernel, the median of a few samples.
  const std::int64_t threads = std::max<std::int64_t>(1, backend.device().compute_units) * 256;
  const device_buffer out = backend.allocate(std::uint64_t(threads) * sizeof(float));
  std::vector<double> lone;
  for (int i = 0; i < 15; ++i) {
    const timed_sample s =
        backend.time_launches(kernel_role::baseline, [&] { backend.fma(out, threads, 4); });
    if (s.valid) lone.push_back(s.time_us);
  }
  ASSERT_FALSE(lone.empty());
  std::sort(lone.begin(), lone.end());
  const double lone_us = lone[lone.size() / 2];
  std::printf("a sample's fixed cost: %.3f us; a lone launch of the built-in kernel: %.3f us\n",
              fixed, lone_us);
  EXPECT_TRUE(std::isfinite(fixed));
  EXPECT_GE(fixed, 0);
  EXPECT_LT(fixed, lone_us);
  if (positive) {
    EXPECT_GT(fixed, 0);
  }
}

}  // namespace kernelscan::testing

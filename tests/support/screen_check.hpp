#pragma once
// Checks a backend's screen of outputs on the device (device_backend::screen_outputs) against
// compare_outputs on the host, for every type: outputs within tolerance pass with the host's
// sums; a wrong element, an unwritten one (a NaN, or an integer's pattern of either kind), an
// infinity and an element past the tolerance are each irregular. Header-only; for the backends'
// device tests.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "engine/device_backend.hpp"
#include "engine/element.hpp"
#include "engine/fill_pattern.hpp"
#include "engine/output_check.hpp"

namespace kernelscan::testing {

// A reference of `n` elements of `t` on the device and an output buffer beside it, screened
// within `atol` and `rtol` unless told otherwise: screen(values) writes `values` to the output and
// screens it against the reference.
struct screen_pair {
  screen_pair(device_backend& on, dtype type, std::int64_t count,
              const std::vector<unsigned char>& reference, double a, double r)
      : backend(on),
        t(type),
        n(count),
        host_ref(reference),
        atol(a),
        rtol(r),
        out(on.allocate(reference.size())),
        ref(on.allocate(reference.size())) {
    on.write(ref, 0, reference.data(), reference.size());
  }
  std::optional<output_screen> screen(const std::vector<unsigned char>& values) {
    return screen(values, atol, rtol);
  }
  std::optional<output_screen> screen(const std::vector<unsigned char>& values, double a,
                                      double r) {
    backend.write(out, 0, values.data(), values.size());
    return backend.screen_outputs(out, ref, t, n, a, r);
  }
  // `values` screened on the device and compared on the host (into `host`), each expected to
  // pass: the screen, or nullopt (a failure added) where there is none or either did not pass.
  std::optional<output_screen> passing(const std::vector<unsigned char>& values,
                                       output_errors& host) {
    const auto s = screen(values);
    if (!s) {
      ADD_FAILURE() << "no screen on the device";
      return std::nullopt;
    }
    compare_outputs(t, values.data(), host_ref.data(), n, 0, atol, rtol, host);
    EXPECT_EQ(host.wrong, 0u);
    EXPECT_EQ(s->irregular, 0u);
    if (host.wrong || s->irregular) return std::nullopt;
    return s;
  }

  device_backend& backend;
  dtype t;
  std::int64_t n;
  std::vector<unsigned char> host_ref;
  double atol, rtol;
  device_buffer out, ref;
};

inline void expect_device_screens_as_the_host_compares(device_backend& backend) {
  constexpr std::int64_t n = 100003;  // a multiple of no work-group size
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16}) {
    SCOPED_TRACE(to_string(t));
    const std::size_t w = size_of(t);
    const double rtol = t == dtype::f64 ? 1e-8 : t == dtype::f32 ? 1e-4 : 1e-2, atol = rtol;
    // The reference: values in [-1, 1) of the type; the output: each off by a fifth of its
    // tolerance (where the type can hold so small a step; else equal).
    std::vector<unsigned char> ref(std::size_t(n) * w), out(ref.size());
    const fill_request f{fill_kind::random, t, n, 0x5c4ee7, 0, 0};
    fill_host(f, ref.data());
    for (std::int64_t i = 0; i < n; ++i) {
      const double r = load_element(t, ref.data() + i * w);
      store_element(t, r + (i % 2 ? 0.2 : -0.2) * (atol + rtol * std::fabs(r)), out.data() + i * w);
    }
    screen_pair device(backend, t, n, ref, atol, rtol);
    output_errors host;
    const auto passing = device.passing(out, host);
    if (!passing) continue;
    EXPECT_NEAR(passing->sum_sq_ref, host.sum_sq_ref, 1e-9 * host.sum_sq_ref);
    EXPECT_NEAR(passing->sum_sq_diff, host.sum_sq_diff, 1e-9 * host.sum_sq_diff + 1e-300);
    EXPECT_GT(passing->sum_sq_ref, 0);

    // One element at a time made irregular, near the start, in the middle and at the end.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    for (const std::int64_t at : {std::int64_t(0), n / 2 + 7, n - 1}) {
      for (const double bad : {0.5, nan, inf, -inf}) {
        SCOPED_TRACE("element " + std::to_string(at) + " = " + std::to_string(bad));
        std::vector<unsigned char> wrong = out;
        const double r_at = load_element(t, ref.data() + at * w);
        store_element(t, std::isfinite(bad) ? r_at + bad : bad, wrong.data() + at * w);
        const auto s = device.screen(wrong);
        ASSERT_TRUE(s);
        EXPECT_EQ(s->irregular, 1u);
        output_errors h;
        compare_outputs(t, wrong.data(), ref.data(), n, 0, atol, rtol, h);
        EXPECT_EQ(h.wrong, 1u);
      }
    }
    // The unwritten pattern (a NaN) where nothing was written.
    std::vector<unsigned char> unwritten = out;
    for (std::int64_t i = 0; i < n; i += 1000)
      store_unwritten(t, unwritten.data() + i * w, 1);
    const auto s = device.screen(unwritten);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->irregular, std::uint64_t((n + 999) / 1000));
  }
  for (dtype t : {dtype::i64, dtype::i32, dtype::u32, dtype::i8, dtype::u8}) {
    SCOPED_TRACE(to_string(t));
    const std::size_t w = size_of(t);
    const double atol = 1, rtol = 0;
    // The reference: random integers; the output: every third element off by one (within atol).
    std::vector<unsigned char> ref(std::size_t(n) * w), out(ref.size());
    fill_host(fill_request{fill_kind::random, t, n, 0x1e7, 0, 0}, ref.data());
    for (std::int64_t i = 0; i < n; ++i) {
      const double r = load_element(t, ref.data() + i * w);
      store_element(t, i % 3 == 0 ? (r > 0 ? r - 1 : r + 1) : r, out.data() + i * w);
    }
    screen_pair device(backend, t, n, ref, atol, rtol);
    output_errors host;
    const auto passing = device.passing(out, host);
    if (!passing) continue;
    EXPECT_EQ(passing->sum_sq_ref, host.sum_sq_ref) << "sums of integers, exact";
    EXPECT_EQ(passing->sum_sq_diff, host.sum_sq_diff);
    EXPECT_GT(passing->sum_sq_diff, 0);
    for (const std::int64_t at : {std::int64_t(0), n / 2 + 7, n - 1}) {
      // Past the tolerance, and either unwritten pattern where nothing was written.
      for (int bad = 0; bad < 3; ++bad) {
        SCOPED_TRACE("element " + std::to_string(at) + " case " + std::to_string(bad));
        std::vector<unsigned char> wrong = out;
        if (bad == 0) {
          const double r_at = load_element(t, ref.data() + at * w);
          store_element(t, r_at >= 4 ? r_at - 3 : r_at + 3, wrong.data() + at * w);
        } else {
          store_unwritten(t, wrong.data() + at * w, bad - 1);
        }
        const auto s = device.screen(wrong);
        ASSERT_TRUE(s);
        EXPECT_EQ(s->irregular, 1u);
        output_errors h;
        compare_outputs(t, wrong.data(), ref.data(), n, 0, atol, rtol, h, bad == 2 ? 1 : 0);
        EXPECT_EQ(h.wrong, 1u);
        if (bad == 0) continue;
        // Unwritten however wide the tolerance, as the host has it.
        const auto wide = device.screen(wrong, 1e30, rtol);
        ASSERT_TRUE(wide);
        EXPECT_EQ(wide->irregular, 1u);
        output_errors hw;
        compare_outputs(t, wrong.data(), ref.data(), n, 0, 1e30, rtol, hw, bad == 2 ? 1 : 0);
        EXPECT_EQ(hw.unwritten, 1u);
      }
    }
  }
}

}  // namespace kernelscan::testing

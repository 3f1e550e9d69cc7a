#pragma once
// Checks a point runner's judgement of a point that beats a measured bandwidth ceiling (measured
// low while other work shared the machine; here set so): the ceiling is measured again over the
// point's own working set before the point is flagged faster_than_roofline, so an honest STREAM
// triad keeps its score, and an axpy that declares a hundred times the bytes it moves is flagged
// still. The engine's ceilings are left set low. Header-only; for the backends' device tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "api/job_spec_codec.hpp"
#include "engine/engine.hpp"
#include "engine/job_plan.hpp"

namespace kernelscan::testing {

// `axpy`: the kernel of tests/support/axpy_spec.hpp in the engine's language.
inline void expect_a_beaten_bandwidth_ceiling_measured_again(engine& e, json axpy) {
  measured_roofline low;
  low.peaks.bandwidth_gbps = 0.05;
  low.method = "set low by the test";
  e.set_roofline(low);
  auto measure = [&](const json& spec) {
    const auto limits = spec_limits::stored();
    const job_plan plan = compile_plan(parse_job_spec(spec, limits), limits.plan);
    return e.measure(plan, 0, 7);
  };
  auto has = [](const std::vector<std::string>& v, const std::string& text) {
    return std::any_of(v.begin(), v.end(),
                       [&](const std::string& x) { return x.find(text) != std::string::npos; });
  };
  const json cold = {{"l2", "cold"}, {"max_time_ms", 200}};
  const point_result honest =
      measure({{"kernel", {{"op", "stream"}, {"variant", "triad"}, {"n", "N"}}},
               {"sweep", {{"N", {1 << 20}}}},
               {"timing", cold}});
  ASSERT_EQ(honest.status, point_status::ok) << (honest.error ? honest.error->message : "");
  EXPECT_FALSE(has(honest.flags, "faster_than_roofline"));
  EXPECT_TRUE(honest.fitness.correct);
  EXPECT_TRUE(has(honest.advice, "measured again, reached")) << honest.advice.back();
  // Placed against the ceiling that judged it, not at hundreds of times the one set low.
  EXPECT_EQ(honest.metrics->roof_source, "measured_again");
  EXPECT_GT(honest.metrics->roof_pct, 0);
  EXPECT_LE(honest.metrics->roof_pct, 100 / (1 - 0.25));  // the larger, a CPU device's, allowance

  json overclaim = {{"kernel", axpy}, {"sweep", {{"N", {1 << 18}}}}, {"timing", cold}};
  overclaim["kernel"]["bytes"] = "1200*N";
  const point_result cheat = measure(overclaim);
  ASSERT_EQ(cheat.status, point_status::ok) << (cheat.error ? cheat.error->message : "");
  EXPECT_TRUE(has(cheat.flags, "faster_than_roofline"));
  EXPECT_EQ(cheat.fitness.combined_score, 0);
  EXPECT_TRUE(has(cheat.advice, "measured again, reached")) << cheat.advice.back();
  EXPECT_EQ(cheat.metrics->roof_source, "measured_again");
  EXPECT_GT(cheat.metrics->roof_pct, 100 / (1 - 0.25));
}

}  // namespace kernelscan::testing

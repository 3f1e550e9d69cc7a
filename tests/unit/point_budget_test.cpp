#include "server/point_budget.hpp"

#include <gtest/gtest.h>

#include "api/job_spec_codec.hpp"

namespace kernelscan {
namespace {

// A mock job of two public points and a held-out one, as a task's submission stores it.
job_spec held_out_job(const std::string& scores, double max_time_ms = 500) {
  json body = json::parse(R"js({
    "engine": "mock",
    "kernel": {"op": "stream", "variant": "triad", "n": "N", "dtype": "f32"},
    "sweep": {"N": [4096, 8192]},
    "held_out": {"N": [12288]}
  })js");
  body["held_out_scores"] = scores;
  body["timing"] = {{"max_time_ms", max_time_ms}};
  return parse_job_spec(body, spec_limits::stored());
}

TEST(PointBudget, IsThePointTimeoutAndTwiceThePointsOwnTime) {
  job_spec spec = held_out_job("shown", 500);
  EXPECT_DOUBLE_EQ(point_budget_s(spec, 30), 31);
  spec.mock.delay_ms = 250;
  EXPECT_DOUBLE_EQ(point_budget_s(spec, 30), 31.5);
}

// With shown scores a held-out point's time can be read from its score anyway; a public point's
// time is the candidate's to see.
TEST(PointBudget, OnlyAPrivateHeldOutPointIsHeld) {
  const job_spec shown = held_out_job("shown");
  const job_spec hidden = held_out_job("private");
  EXPECT_EQ(held_out_hold(shown, 2, 10, 31000).what, point_hold::kind::none);
  EXPECT_EQ(held_out_hold(hidden, 0, 10, 31000).what, point_hold::kind::none);
  EXPECT_EQ(held_out_hold(hidden, 1, 10, 31000).what, point_hold::kind::none);
  EXPECT_EQ(held_out_hold(hidden, 2, 10, 31000).what, point_hold::kind::until);
}

// The rungs: q = 1 s + twice max_time (2 s here), then 4, 8, 16 s; the last below the
// watchdog's deadline (31 s less its margin: 29.45 s); past that, the watchdog.
TEST(PointBudget, AHeldOutPointTakesTheFirstRungThatCoversItsTime) {
  const job_spec spec = held_out_job("private", 500);
  const double budget_ms = 1000 * point_budget_s(spec, 30);
  auto rung = [&](double wall_ms) {
    const point_hold h = held_out_hold(spec, 2, wall_ms, budget_ms);
    EXPECT_EQ(h.what, point_hold::kind::until) << wall_ms;
    return h.wall_ms;
  };
  // Times that differ a thousandfold below q all take q: the size they grew with is not read.
  EXPECT_DOUBLE_EQ(rung(1), 2000);
  EXPECT_DOUBLE_EQ(rung(1000), 2000);
  EXPECT_DOUBLE_EQ(rung(2000), 2000);
  EXPECT_DOUBLE_EQ(rung(2001), 4000);
  EXPECT_DOUBLE_EQ(rung(7999), 8000);
  EXPECT_DOUBLE_EQ(rung(16000), 16000);
  EXPECT_DOUBLE_EQ(rung(16001), 29450);
  EXPECT_DOUBLE_EQ(rung(29450), 29450);
  const point_hold late = held_out_hold(spec, 2, 29451, budget_ms);
  EXPECT_EQ(late.what, point_hold::kind::watchdog);
  EXPECT_DOUBLE_EQ(late.wall_ms, budget_ms);
}

// A watchdog budget shorter than the first rung leaves one rung: the latest answer.
TEST(PointBudget, ABudgetShorterThanTheFirstRungLeavesOneRung) {
  const job_spec spec = held_out_job("private", 500);
  const double budget_ms = 1000 * point_budget_s(spec, 1);  // 2 s, less its 0.25 s margin
  EXPECT_DOUBLE_EQ(point_budget_s(spec, 1), 2);
  const point_hold quick = held_out_hold(spec, 2, 5, budget_ms);
  EXPECT_EQ(quick.what, point_hold::kind::until);
  EXPECT_DOUBLE_EQ(quick.wall_ms, 1750);
  EXPECT_EQ(held_out_hold(spec, 2, 1751, budget_ms).what, point_hold::kind::watchdog);
}

}  // namespace
}  // namespace kernelscan

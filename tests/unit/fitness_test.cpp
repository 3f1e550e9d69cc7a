#include "engine/fitness.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kernelscan {
namespace {

// A point measured in `median_us` whose outputs were verified and passed.
point_result measured(double median_us) {
  point_result r;
  r.status = point_status::ok;
  time_summary t;
  t.median = median_us;
  r.time_us = t;
  r.verification.status = "passed";
  r.verification.trials = 3;
  return r;
}

// Five pairs are too few for a 95% interval of the median ratio: the speedup is given, its
// interval is not, and the point's fitness has no speedup_ci95.
TEST(Fitness, FewPairsGiveASpeedupWithoutAnInterval) {
  const std::vector<double> cand{10, 11, 10, 12, 10}, base{20, 22, 20, 24, 20};
  const auto e = paired_speedup(cand, base);
  EXPECT_DOUBLE_EQ(e.speedup, 2.0);
  EXPECT_FALSE(e.ci95_low || e.ci95_high);
  point_result r;
  r.status = point_status::ok;
  r.time_us = summarize(cand);
  r.verification.status = "passed";
  const point_fitness f = score_point(r, fitness_options{}, e);
  EXPECT_EQ(f.speedup, 2.0);
  EXPECT_FALSE(f.speedup_ci95);
}

TEST(Fitness, PairedSpeedupIsTheMedianRatioWithAnOrderStatisticInterval) {
  std::vector<double> cand, base;
  for (int i = 0; i < 101; ++i) {
    const double drift = 1.0 + 0.002 * i;  // both slow down together: the ratio stays 2
    cand.push_back(10.0 * drift * (1 + 0.01 * ((i * 37) % 11 - 5) / 5.0));
    base.push_back(20.0 * drift);
  }
  const auto e = paired_speedup(cand, base);
  EXPECT_NEAR(e.speedup, 2.0, 0.02);
  EXPECT_LE(e.ci95_low.value(), e.speedup);
  EXPECT_GE(e.ci95_high.value(), e.speedup);
  EXPECT_GT(e.ci95_low.value(), 1.97);
  EXPECT_LT(e.ci95_high.value(), 2.03);
  EXPECT_NEAR(e.baseline_us, 20.0 * 1.1, 0.01);
}

TEST(Fitness, LatencyScoreAndCombinedWithATarget) {
  fitness_options o;
  o.target_us = 5;
  o.correctness_weight = 0.25;
  auto f = score_point(measured(10), o, std::nullopt);
  EXPECT_TRUE(f.correct);
  EXPECT_DOUBLE_EQ(*f.latency_score, 0.5);
  EXPECT_DOUBLE_EQ(f.combined_score, 0.25 + 0.75 * 0.5);
  // At the target: 1.
  f = score_point(measured(5), o, std::nullopt);
  EXPECT_DOUBLE_EQ(*f.latency_score, 1.0);
  EXPECT_DOUBLE_EQ(f.combined_score, 1.0);
  // Faster than the target keeps scoring more (target / median, not capped at 1), so a loop
  // that has met the target still sees which candidate is faster.
  f = score_point(measured(2), o, std::nullopt);
  EXPECT_DOUBLE_EQ(*f.latency_score, 2.5);
  EXPECT_DOUBLE_EQ(f.combined_score, 0.25 + 0.75 * 2.5);
  const auto faster = score_point(measured(1), o, std::nullopt);
  EXPECT_GT(faster.combined_score, f.combined_score);
}

TEST(Fitness, APointWhoseOutputsWereNotCheckedIsNeverCorrect) {
  fitness_options o;
  o.target_us = 5;
  for (const char* status : {"skipped", "", "failed"}) {
    auto r = measured(1);
    r.verification.status = status;
    r.verification.trials = 0;
    const auto f = score_point(r, o, std::nullopt);
    EXPECT_FALSE(f.correct) << status;
    EXPECT_EQ(f.combined_score, 0) << status;
    EXPECT_DOUBLE_EQ(*f.latency_score, 5.0) << status;  // the time is still reported
  }
  auto unchecked = measured(10);
  unchecked.verification.status = "skipped";
  EXPECT_EQ(score_point(unchecked, {}, std::nullopt).combined_score, 0);
}

TEST(Fitness, WithoutATargetTheSpeedupIsTheScore) {
  fitness_options o;
  o.baseline = gemm_spec{};
  const auto f = score_point(measured(10), o, speedup_estimate{1.8, 1.7, 1.9, 18});
  EXPECT_DOUBLE_EQ(*f.speedup, 1.8);
  EXPECT_EQ(*f.speedup_ci95, std::pair(1.7, 1.9));
  EXPECT_DOUBLE_EQ(*f.baseline_us, 18);
  EXPECT_FALSE(f.latency_score);
  EXPECT_DOUBLE_EQ(f.combined_score, 1.8);
  // Neither target nor baseline: a correct point scores 1.
  EXPECT_DOUBLE_EQ(score_point(measured(10), {}, std::nullopt).combined_score, 1.0);
}

TEST(Fitness, FailedFlaggedOrWrongPointsScoreZero) {
  fitness_options o;
  o.target_us = 100;
  auto failed = failed_point(0, {}, "timeout", "late");
  EXPECT_FALSE(score_point(failed, o, std::nullopt).correct);
  EXPECT_EQ(score_point(failed, o, std::nullopt).combined_score, 0);

  for (const char* flag : {"faster_than_roofline", "output_not_written", "verification_failed",
                           "precision_mismatch", "timeout", "device_fault"}) {
    auto r = measured(10);
    r.flags = {flag};
    const auto f = score_point(r, o, speedup_estimate{50, 40, 60, 500});
    EXPECT_FALSE(f.correct) << flag;
    EXPECT_EQ(f.combined_score, 0) << flag;
  }
  auto warned = measured(10);
  warned.flags = {"excessive_speedup"};  // a warning only
  EXPECT_TRUE(score_point(warned, o, std::nullopt).correct);
  EXPECT_GT(score_point(warned, o, std::nullopt).combined_score, 0);

  auto wrong = measured(10);
  wrong.verification.status = "failed";
  EXPECT_EQ(score_point(wrong, o, std::nullopt).combined_score, 0);
}

TEST(Fitness, JobSummaryIsAGeometricMeanOverEveryPoint) {
  std::vector<scored_point> pts{{true, true, 2.0, 2.0, std::nullopt},
                                {true, true, 8.0, 8.0, std::nullopt},
                                {false, false, 0.0, std::nullopt, std::nullopt}};
  auto j = summarize_fitness(pts, 4, true, {"timeout"});
  EXPECT_FALSE(j.correct);
  EXPECT_EQ(j.points, 4u);
  EXPECT_EQ(j.ok_points, 2u);
  EXPECT_EQ(j.correct_points, 2u);
  EXPECT_DOUBLE_EQ(*j.speedup, 4.0);  // sqrt(2 · 8)
  EXPECT_EQ(j.combined_score, 0);     // a failed point, and one never measured, make it 0
  EXPECT_EQ(j.flags, std::vector<std::string>{"timeout"});
  EXPECT_FALSE(j.latency_score);
  // Failing the slow size does not pay: 2 and 0.5 give 1, 2 alone (of two points) gives 0.
  std::vector<scored_point> both{{true, true, 2.0, 2.0, std::nullopt},
                                 {true, true, 0.5, 0.5, std::nullopt}};
  EXPECT_DOUBLE_EQ(summarize_fitness(both, 2, true, {}).combined_score, 1.0);
  both[1] = {true, false, 0.0, std::nullopt, std::nullopt};
  EXPECT_EQ(summarize_fitness(both, 2, true, {}).combined_score, 0);
  EXPECT_DOUBLE_EQ(summarize_fitness(pts, 2, true, {}).combined_score, 4.0);  // sqrt(2 · 8)

  std::vector<scored_point> good{{true, true, 1, std::nullopt, 0.5},
                                 {true, true, 1, std::nullopt, 1.0}};
  j = summarize_fitness(good, 2, true, {});
  EXPECT_TRUE(j.correct);
  EXPECT_DOUBLE_EQ(*j.latency_score, 0.75);
  EXPECT_DOUBLE_EQ(j.combined_score, 1.0);
  // A job that did not succeed scores 0 whatever its points did.
  EXPECT_EQ(summarize_fitness(good, 2, false, {}).combined_score, 0);
  EXPECT_FALSE(summarize_fitness(good, 2, false, {}).correct);
  EXPECT_FALSE(j.simulated);
  good[1].simulated = true;  // one point from the mock engine's model makes the job's simulated
  EXPECT_TRUE(summarize_fitness(good, 2, true, {}).simulated);
}

// A point's score is capped (fitness.score_cap), so one outlier cannot carry the job.
TEST(Fitness, APointsScoreIsCapped) {
  fitness_options o;
  o.baseline = kernel_spec{};
  auto r = measured(10);
  EXPECT_DOUBLE_EQ(score_point(r, o, speedup_estimate{50, 40, 60, 500}).combined_score, 10);
  o.score_cap = 100;
  EXPECT_DOUBLE_EQ(score_point(r, o, speedup_estimate{50, 40, 60, 500}).combined_score, 50);
  EXPECT_DOUBLE_EQ(score_point(r, o, speedup_estimate{3, 2, 4, 30}).combined_score, 3);
}

// A job with an excessive_speedup point has its score withheld until an operator confirms it,
// unless the daemon scores such jobs at once.
TEST(Fitness, AnExcessiveSpeedupWithholdsTheJobsScoreUntilConfirmed) {
  std::vector<scored_point> pts{{true, true, 10.0, 40.0, std::nullopt},
                                {true, true, 2.5, 2.5, std::nullopt}};
  const std::vector<std::string> flags{"excessive_speedup"};
  auto j = summarize_fitness(pts, 2, true, flags);
  EXPECT_TRUE(j.withheld);
  EXPECT_EQ(j.combined_score, 0);
  EXPECT_TRUE(j.correct);
  j = summarize_fitness(pts, 2, true, flags, {true, true});
  EXPECT_FALSE(j.withheld);
  EXPECT_TRUE(j.confirmed);
  EXPECT_DOUBLE_EQ(j.combined_score, 5.0);  // sqrt(10 · 2.5)
  j = summarize_fitness(pts, 2, true, flags, {false, false});
  EXPECT_FALSE(j.withheld);
  EXPECT_DOUBLE_EQ(j.combined_score, 5.0);
  // Nothing to withhold without the flag.
  EXPECT_FALSE(summarize_fitness(pts, 2, true, {}).withheld);
}

}  // namespace
}  // namespace kernelscan

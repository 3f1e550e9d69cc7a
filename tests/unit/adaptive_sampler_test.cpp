#include "engine/adaptive_sampler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace kernelscan {
namespace {

// Feeds `next()` samples, each taking `ms_per_sample` of sampling time, until the sampler stops
// or `limit` samples were added. Returns the number of samples added.
template <class Next>
int run(adaptive_sampler& sampler, double ms_per_sample, Next next, int limit = 1000000) {
  for (int i = 1; i <= limit; ++i) {
    sampler.add(next());
    if (sampler.should_stop(double(i) * ms_per_sample)) return i;
  }
  return limit;
}

double low_noise(int i) {
  return 100.0 + 0.001 * double(i % 7);
}

TEST(AdaptiveSampler, ConvergesOnLowNoiseOnlyAfterMinSamplesAndMinTime) {
  // Time is the binding minimum: 10 samples reached at 1 ms, 5 ms reached at sample 50.
  timing_options t;
  t.min_samples = 10;
  t.min_time_ms = 5.0;
  t.max_time_ms = 1000.0;
  t.target_rel_noise = 0.005;
  adaptive_sampler sampler(t);
  int i = 0;
  const int taken = run(sampler, 0.1, [&] { return low_noise(i++); });
  EXPECT_EQ(taken, 50);
  EXPECT_EQ(sampler.kept(), 50u);
  const auto r = sampler.finish();
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.stop_reason, "noise_target");
  EXPECT_EQ(r.samples_us.size(), 50u);
  EXPECT_EQ(r.discarded, 0u);
  EXPECT_DOUBLE_EQ(r.elapsed_ms, 5.0);
  EXPECT_EQ(r.summary.count, 50u);
  EXPECT_NEAR(r.summary.median, 100.0, 0.01);
  EXPECT_LE(r.summary.rel_noise.value(), 0.005);
}

TEST(AdaptiveSampler, ConvergesOnlyAfterMinSamplesWhenTimeComesFirst) {
  // Samples are the binding minimum: 1 ms passes at sample 10, 200 samples at 20 ms.
  timing_options t;
  t.min_samples = 200;
  t.min_time_ms = 1.0;
  t.max_time_ms = 1000.0;
  adaptive_sampler sampler(t);
  int i = 0;
  const int taken = run(sampler, 0.1, [&] { return low_noise(i++); });
  EXPECT_EQ(taken, 200);
  const auto r = sampler.finish();
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.stop_reason, "noise_target");
  EXPECT_EQ(r.samples_us.size(), 200u);
}

TEST(AdaptiveSampler, DoesNotStopBeforeTheMinimaEvenWithPerfectSamples) {
  timing_options t;
  t.min_samples = 30;
  t.min_time_ms = 12.0;
  t.max_time_ms = 1000.0;
  adaptive_sampler sampler(t);
  for (int i = 1; i <= 200; ++i) {
    sampler.add(50.0);
    const double elapsed = double(i) * 0.5;
    const bool stop = sampler.should_stop(elapsed);
    const bool minima = i >= 30 && elapsed >= 12.0;
    ASSERT_EQ(stop, minima) << "sample " << i;
    if (stop) break;
  }
  EXPECT_EQ(sampler.kept(), 30u);
  EXPECT_TRUE(sampler.finish().converged);
}

// With fewer than 6 samples the median has no 95% interval: however alike they are, a point
// asked for 1 sample is not converged before its sixth, and one that may take 3 stops
// unconverged, its summary without an interval.
TEST(AdaptiveSampler, ANoiseTargetTakesSixSamples) {
  timing_options t;
  t.min_samples = 1;
  t.min_time_ms = 0;
  t.max_time_ms = 1000.0;
  adaptive_sampler sampler(t);
  EXPECT_EQ(run(sampler, 0.1, [] { return 50.0; }), 6);
  EXPECT_TRUE(sampler.finish().converged);

  t.max_samples = 3;
  adaptive_sampler capped(t);
  EXPECT_EQ(run(capped, 0.1, [] { return 50.0; }), 3);
  const auto r = capped.finish();
  EXPECT_FALSE(r.converged);
  EXPECT_EQ(r.stop_reason, "max_samples");
  EXPECT_FALSE(r.summary.ci95_low || r.summary.rel_noise);
}

TEST(AdaptiveSampler, StopsAtMaxTimeUnconvergedOnNoisyData) {
  timing_options t;
  t.min_samples = 10;
  t.min_time_ms = 1.0;
  t.max_time_ms = 100.0;
  t.target_rel_noise = 0.005;
  adaptive_sampler sampler(t);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> wide(1.0, 1000.0);
  const int taken = run(sampler, 0.1, [&] { return wide(rng); });
  EXPECT_EQ(taken, 1000);  // 100 ms at 0.1 ms a sample
  const auto r = sampler.finish();
  EXPECT_FALSE(r.converged);
  EXPECT_EQ(r.stop_reason, "max_time");
  EXPECT_DOUBLE_EQ(r.elapsed_ms, 100.0);
  EXPECT_EQ(r.samples_us.size(), 1000u);
  EXPECT_GT(r.summary.rel_noise.value(), 0.005);
}

TEST(AdaptiveSampler, StopsAtMaxSamples) {
  timing_options t;
  t.min_samples = 10;
  t.min_time_ms = 0.0;
  t.max_samples = 50;
  t.max_time_ms = 1e6;
  adaptive_sampler sampler(t);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> wide(1.0, 1000.0);
  const int taken = run(sampler, 0.01, [&] { return wide(rng); });
  EXPECT_EQ(taken, 50);
  const auto r = sampler.finish();
  EXPECT_FALSE(r.converged);
  EXPECT_EQ(r.stop_reason, "max_samples");
  EXPECT_EQ(r.samples_us.size(), 50u);
  EXPECT_EQ(r.summary.count, 50u);
}

TEST(AdaptiveSampler, AThrottledDeviceIsNeverLeftWithoutSamples) {
  timing_options t;
  t.min_samples = 10;
  t.min_time_ms = 0.0;
  t.max_time_ms = 1e6;
  adaptive_sampler sampler(t);
  for (int i = 0; i < 200; ++i)
    sampler.add(low_noise(i), true);
  sampler.add(5.0, false, true);  // invalid: always dropped
  (void)sampler.should_stop(1.0);
  const auto r = sampler.finish();
  EXPECT_EQ(r.samples_us.size() + r.discarded, 201u);
  EXPECT_GT(r.samples_us.size(), 90u);
  EXPECT_EQ(r.throttled_kept, r.samples_us.size());
  EXPECT_LE(r.discarded, r.samples_us.size() + 10 + 1);
}

TEST(AdaptiveSampler, ThrottledSamplesAreDiscardedAndExcluded) {
  timing_options t;
  t.min_samples = 20;
  t.min_time_ms = 0.0;
  t.max_time_ms = 1e6;
  adaptive_sampler sampler(t);
  int added = 0;
  bool stopped = false;
  for (int i = 0; i < 1000 && !stopped; ++i) {
    const bool throttled = i % 3 == 0;
    // Throttled samples are wildly slow; they must not reach the statistics.
    sampler.add(throttled ? 1e6 : low_noise(i), throttled);
    ++added;
    stopped = sampler.should_stop(double(added) * 0.01);
  }
  ASSERT_TRUE(stopped);
  const auto r = sampler.finish();
  EXPECT_TRUE(r.converged);
  // Only kept samples count towards min_samples: 20 kept means 30 added (every third dropped).
  EXPECT_EQ(r.samples_us.size(), 20u);
  EXPECT_EQ(r.discarded, 10u);
  EXPECT_EQ(added, 30);
  EXPECT_EQ(r.summary.count, 20u);
  EXPECT_LT(r.summary.max, 101.0);
  EXPECT_LT(r.summary.mean, 101.0);
  EXPECT_TRUE(
      std::none_of(r.samples_us.begin(), r.samples_us.end(), [](double x) { return x > 1000.0; }));
}

TEST(AdaptiveSampler, EverySampleInvalidGivesAnEmptySummary) {
  timing_options t;
  t.min_samples = 5;
  t.max_time_ms = 1.0;
  t.min_time_ms = 0.5;
  adaptive_sampler sampler(t);
  int i = 0;
  bool stopped = false;
  while (!stopped) {
    sampler.add(10.0, false, true);
    stopped = sampler.should_stop(double(++i) * 0.1);
  }
  const auto r = sampler.finish();
  EXPECT_EQ(r.stop_reason, "max_time");
  EXPECT_FALSE(r.converged);
  EXPECT_EQ(r.discarded, std::size_t(i));
  EXPECT_TRUE(r.samples_us.empty());
  EXPECT_EQ(r.summary.count, 0u);
}

TEST(AdaptiveSampler, SamplesKeepTheirOrder) {
  timing_options t;
  t.min_samples = 1;
  t.max_samples = 4;
  t.min_time_ms = 0;
  t.target_rel_noise = 1e-6;
  adaptive_sampler sampler(t);
  const std::vector<double> in{4.0, 1.0, 3.0, 2.0};
  for (double x : in) {
    sampler.add(x);
    if (sampler.should_stop(0.0)) break;
  }
  const auto r = sampler.finish();
  EXPECT_EQ(r.samples_us, in);
  EXPECT_EQ(r.stop_reason, "max_samples");
  EXPECT_DOUBLE_EQ(r.summary.median, 2.5);
}

}  // namespace
}  // namespace kernelscan

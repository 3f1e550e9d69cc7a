#include "engine/statistics.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace kernelscan {
namespace {

constexpr double k_z95 = 1.959963984540054;

// ln(k!) for k = 0..n, from lgamma.
std::vector<double> log_factorials(std::size_t n) {
  std::vector<double> out(n + 1);
  for (std::size_t k = 0; k <= n; ++k)
    out[k] = std::lgamma(double(k) + 1.0);
  return out;
}

// P(B <= j) for B ~ Binomial(n, 1/2), from lgamma-based terms.
double binomial_cdf_half(std::size_t n, std::size_t j, const std::vector<double>& lf) {
  double cdf = 0;
  const double log_half_n = -double(n) * std::log(2.0);
  for (std::size_t i = 0; i <= j && i <= n; ++i) {
    cdf += std::exp(lf[n] - lf[i] - lf[n - i] + log_half_n);
  }
  return cdf;
}

// The exact 0-based rank j of the narrowest symmetric interval [x(j), x(n-1-j)] with coverage
// 1 - 2 P(B <= j) >= 0.95, or nullopt-like SIZE_MAX when even (0, n-1) falls short.
std::size_t exact_rank(std::size_t n, const std::vector<double>& lf) {
  std::size_t best = SIZE_MAX;
  double cdf = 0;
  const double log_half_n = -double(n) * std::log(2.0);
  for (std::size_t j = 0; j < n / 2; ++j) {
    cdf += std::exp(lf[n] - lf[j] - lf[n - j] + log_half_n);
    if (1.0 - 2.0 * cdf < 0.95) break;
    best = j;
  }
  return best;
}

TEST(Percentile, MatchesNumpyType7) {
  const std::vector<double> four{1, 2, 3, 4};
  // numpy.percentile([1, 2, 3, 4], p): h = 3 p / 100.
  EXPECT_DOUBLE_EQ(percentile_sorted(four, 0), 1.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(four, 25), 1.75);
  EXPECT_DOUBLE_EQ(percentile_sorted(four, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile_sorted(four, 90), 3.7);
  EXPECT_DOUBLE_EQ(percentile_sorted(four, 100), 4.0);

  const std::vector<double> five{10, 20, 30, 40, 50};
  // h = 4 p / 100.
  EXPECT_DOUBLE_EQ(percentile_sorted(five, 5), 12.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(five, 50), 30.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(five, 95), 48.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(five, 99), 49.6);
  EXPECT_DOUBLE_EQ(percentile_sorted(five, 37.5), 25.0);

  const std::vector<double> uneven{1, 2, 4, 8, 16, 32, 64};
  // h = 6 p / 100: p=10 -> 0.6 -> 1.6; p=75 -> 4.5 -> 24; p=99 -> 5.94 -> 32 + .94 * 32.
  EXPECT_DOUBLE_EQ(percentile_sorted(uneven, 10), 1.6);
  EXPECT_DOUBLE_EQ(percentile_sorted(uneven, 75), 24.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(uneven, 99), 62.08);
}

TEST(Percentile, EdgeCases) {
  EXPECT_DOUBLE_EQ(percentile_sorted(std::vector<double>{}, 50), 0.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(std::vector<double>{7.5}, 0), 7.5);
  EXPECT_DOUBLE_EQ(percentile_sorted(std::vector<double>{7.5}, 99), 7.5);
  const std::vector<double> two{1, 3};
  EXPECT_DOUBLE_EQ(percentile_sorted(two, 50), 2.0);
  // Out-of-range p is clamped to [0, 100].
  EXPECT_DOUBLE_EQ(percentile_sorted(two, -5), 1.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(two, 150), 3.0);
}

TEST(Summarize, KnownDataEvenCount) {
  const std::vector<double> data{5, 9, 2, 4, 7, 4, 5, 4};  // sorted: 2 4 4 4 5 5 7 9
  const auto s = summarize(data);
  EXPECT_EQ(s.count, 8u);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
  // Squared deviations sum to 32; the sample (n-1) variance is 32/7.
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(32.0 / 7.0));
  // h = 7 p / 100: p5 -> 0.35, p95 -> 6.65, p99 -> 6.93.
  EXPECT_DOUBLE_EQ(s.p5, 2.7);
  EXPECT_DOUBLE_EQ(s.p95, 8.3);
  EXPECT_DOUBLE_EQ(s.p99, 8.86);
  // n = 8 cannot reach 95% with an inner pair: the CI is (min, max).
  EXPECT_DOUBLE_EQ(s.ci95_low.value(), 2.0);
  EXPECT_DOUBLE_EQ(s.ci95_high.value(), 9.0);
  EXPECT_DOUBLE_EQ(s.rel_noise.value(), 7.0 / (2 * k_z95 * 4.5));
}

TEST(Summarize, KnownDataOddCount) {
  const std::vector<double> data{10, 1, 3, 8, 6, 2, 9, 4, 7, 5, 11};  // 1..11
  const auto s = summarize(data);
  EXPECT_EQ(s.count, 11u);
  EXPECT_DOUBLE_EQ(s.median, 6.0);
  EXPECT_DOUBLE_EQ(s.mean, 6.0);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(110.0 / 10.0));
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 11.0);
  EXPECT_DOUBLE_EQ(s.p5, 1.5);    // h = 0.5
  EXPECT_DOUBLE_EQ(s.p95, 10.5);  // h = 9.5
  EXPECT_DOUBLE_EQ(s.p99, 10.9);  // h = 9.9
  // n = 11: P(B <= 1) = 12/2048 <= 0.025 < P(B <= 2) = 67/2048, so ranks (1, 9).
  EXPECT_DOUBLE_EQ(s.ci95_low.value(), 2.0);
  EXPECT_DOUBLE_EQ(s.ci95_high.value(), 10.0);
  EXPECT_DOUBLE_EQ(s.rel_noise.value(), 8.0 / (2 * k_z95 * 6.0));
}

TEST(Summarize, SingleSampleAndConstantData) {
  const auto one = summarize(std::vector<double>{3.25});
  EXPECT_EQ(one.count, 1u);
  EXPECT_DOUBLE_EQ(one.median, 3.25);
  EXPECT_DOUBLE_EQ(one.stddev, 0.0);
  EXPECT_DOUBLE_EQ(one.p99, 3.25);

  const auto flat = summarize(std::vector<double>(50, 2.0));
  EXPECT_DOUBLE_EQ(flat.stddev, 0.0);
  EXPECT_DOUBLE_EQ(flat.rel_noise.value(), 0.0);
  EXPECT_DOUBLE_EQ(flat.ci95_low.value(), 2.0);
  EXPECT_DOUBLE_EQ(flat.ci95_high.value(), 2.0);
}

// Below 6 samples no interval of order statistics holds the median with 95% confidence (the
// samples' range: 1 - 2^(1-n), 94% at 5), so there is none to give, nor a noise estimate: one
// sample is not "± 0", and two are not a 95% interval.
TEST(Summarize, TooFewSamplesForA95PercentIntervalHaveNone) {
  for (std::size_t n = 1; n < k_ci95_min_samples; ++n) {
    std::vector<double> data(n);
    for (std::size_t i = 0; i < n; ++i)
      data[i] = 10.0 + double(i);
    const auto s = summarize(data);
    EXPECT_FALSE(s.ci95_low || s.ci95_high || s.rel_noise) << "n = " << n;
    EXPECT_EQ(relative_noise(data), std::numeric_limits<double>::infinity()) << "n = " << n;
  }
  const auto six = summarize(std::vector<double>{1, 2, 3, 4, 5, 6});
  EXPECT_EQ(six.ci95_low, 1.0);
  EXPECT_EQ(six.ci95_high, 6.0);
  ASSERT_TRUE(six.rel_noise);
  EXPECT_GT(*six.rel_noise, 0.0);
}

TEST(MedianCiRanks, SmallKnownValues) {
  EXPECT_EQ(median_ci_ranks(10), (std::pair<std::size_t, std::size_t>{1, 8}));
  EXPECT_EQ(median_ci_ranks(5), (std::pair<std::size_t, std::size_t>{0, 4}));
  EXPECT_EQ(median_ci_ranks(1), (std::pair<std::size_t, std::size_t>{0, 0}));
  EXPECT_EQ(median_ci_ranks(2), (std::pair<std::size_t, std::size_t>{0, 1}));
  // n = 6 is the first with 1 - 2/64 >= 0.95 for (min, max); n = 9 the first with an inner pair.
  EXPECT_EQ(median_ci_ranks(6), (std::pair<std::size_t, std::size_t>{0, 5}));
  EXPECT_EQ(median_ci_ranks(8), (std::pair<std::size_t, std::size_t>{0, 7}));
  EXPECT_EQ(median_ci_ranks(9), (std::pair<std::size_t, std::size_t>{1, 7}));
  EXPECT_EQ(median_ci_ranks(11), (std::pair<std::size_t, std::size_t>{1, 9}));
}

TEST(MedianCiRanks, ExactCoverageAtLeast95AndNarrowest) {
  const std::size_t max_n = 3000;
  const auto lf = log_factorials(max_n);
  for (std::size_t n = 6; n <= max_n; ++n) {
    const auto [lo, hi] = median_ci_ranks(n);
    ASSERT_EQ(hi, n - 1 - lo) << "n = " << n << ": not symmetric";
    ASSERT_LT(lo, hi) << "n = " << n;
    const double coverage = 1.0 - 2.0 * binomial_cdf_half(n, lo, lf);
    ASSERT_GE(coverage, 0.95) << "n = " << n << " ranks (" << lo << ", " << hi << ")";
    if (n <= 1000) {
      // One rank narrower on each side would fall below 95% (or cross the middle).
      if (lo + 1 < n - 2 - lo) {
        const double narrower = 1.0 - 2.0 * binomial_cdf_half(n, lo + 1, lf);
        ASSERT_LT(narrower, 0.95) << "n = " << n << ": (" << lo + 1 << ", " << hi - 1
                                  << ") also covers 95%";
      }
    }
  }
}

TEST(MedianCiRanks, NormalApproximationWithinOneRankOfExact) {
  const std::size_t max_n = 3000;
  const auto lf = log_factorials(max_n);
  for (std::size_t n = 1001; n <= max_n; ++n) {
    const std::size_t exact = exact_rank(n, lf);
    ASSERT_NE(exact, SIZE_MAX);
    const auto [lo, hi] = median_ci_ranks(n);
    const auto diff = lo > exact ? lo - exact : exact - lo;
    ASSERT_LE(diff, 1u) << "n = " << n << ": approx " << lo << ", exact " << exact;
  }
  // Past the cache (n >= 4096) the approximation is computed directly.
  const auto big = log_factorials(5000);
  const std::size_t exact = exact_rank(5000, big);
  const auto [lo, hi] = median_ci_ranks(5000);
  EXPECT_LE(lo > exact ? lo - exact : exact - lo, 1u);
  EXPECT_EQ(hi, 4999 - lo);
}

TEST(MedianCiRanks, MatchesExactRankForSmallN) {
  const auto lf = log_factorials(1000);
  for (std::size_t n = 6; n <= 1000; ++n) {
    EXPECT_EQ(median_ci_ranks(n).first, exact_rank(n, lf)) << "n = " << n;
  }
  for (std::size_t n = 1; n < 6; ++n) {
    EXPECT_EQ(median_ci_ranks(n), (std::pair<std::size_t, std::size_t>{0, n - 1})) << n;
  }
}

TEST(MedianCiRanks, OtherConfidenceLevels) {
  // 50%: n = 10, P(B <= 3) = 176/1024 <= 0.25 < P(B <= 4) = 386/1024.
  EXPECT_EQ(median_ci_ranks(10, 0.5), (std::pair<std::size_t, std::size_t>{3, 6}));
  // 99%: P(B <= 0) = 1/1024 <= 0.005 < P(B <= 1) = 11/1024: only (min, max) reaches it.
  EXPECT_EQ(median_ci_ranks(10, 0.99), (std::pair<std::size_t, std::size_t>{0, 9}));
}

TEST(RelativeNoise, EqualsSummarize) {
  std::mt19937_64 rng(1234);
  std::lognormal_distribution<double> dist(3.0, 0.2);
  for (std::size_t n : {6u, 7u, 10u, 11u, 64u, 101u, 1000u, 1001u, 5000u}) {
    std::vector<double> samples(n);
    for (auto& x : samples)
      x = dist(rng);
    const double expected = summarize(samples).rel_noise.value();
    std::vector<double> scratch = samples;
    EXPECT_DOUBLE_EQ(relative_noise(scratch), expected) << "n = " << n;
    EXPECT_GT(expected, 0.0);
  }
}

TEST(RelativeNoise, AgreesWithSummarizeForAZeroMedian) {
  std::vector<double> zeros(20, 0.0);
  EXPECT_EQ(relative_noise(zeros), summarize(std::vector<double>(20, 0.0)).rel_noise);
}

TEST(MedianCi, CoversTheTrueMedianAbout95PercentOfTheTime) {
  std::mt19937_64 rng(20240601);
  const double true_median = 100.0;
  std::normal_distribution<double> dist(true_median, 5.0);
  const int repetitions = 400;
  int covered = 0;
  std::vector<double> samples(2000);
  for (int r = 0; r < repetitions; ++r) {
    for (auto& x : samples)
      x = dist(rng);
    const auto s = summarize(samples);
    if (*s.ci95_low <= true_median && true_median <= *s.ci95_high) ++covered;
  }
  const double rate = double(covered) / repetitions;
  EXPECT_GE(rate, 0.92) << covered << " of " << repetitions;
  EXPECT_LE(rate, 0.98) << covered << " of " << repetitions;
}

}  // namespace
}  // namespace kernelscan

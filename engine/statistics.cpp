#include "engine/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace kernelscan {
namespace {

constexpr double k_z95 = 1.959963984540054;

// Median of data whose middle order statistics `select` can place; reorders `data`.
double select_median(std::span<double> data) {
  const std::size_t n = data.size();
  auto mid = data.begin() + std::ptrdiff_t(n / 2);
  std::nth_element(data.begin(), mid, data.end());
  if (n % 2 == 1) return *mid;
  const double upper = *mid;
  const double lower = *std::max_element(data.begin(), mid);
  return (lower + upper) / 2;
}

}  // namespace

double percentile_sorted(std::span<const double> sorted, double p) {
  if (sorted.empty()) return 0;
  if (sorted.size() == 1) return sorted.front();
  const double h = (double(sorted.size()) - 1) * std::clamp(p, 0.0, 100.0) / 100.0;
  const auto lo = std::size_t(std::floor(h));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - double(lo)) * (sorted[hi] - sorted[lo]);
}

namespace {

std::pair<std::size_t, std::size_t> compute_median_ci_ranks(std::size_t n, double confidence) {
  if (n <= 1) return {0, 0};
  const double tail = (1.0 - confidence) / 2.0;
  // Largest j (0-based) with P(B <= j) <= tail, where B ~ Binomial(n, 1/2); the CI is then
  // [x(j), x(n-1-j)] with coverage 1 - 2 P(B <= j). The mass is built up iteratively
  // (pmf(i+1) = pmf(i) (n-i)/(i+1)) while 2^-n is still a normal double.
  if (n <= 1000) {
    double pmf = std::ldexp(1.0, -int(n));
    double cdf = 0;
    std::size_t j = 0;
    bool found = false;
    for (std::size_t i = 0; i < n / 2; ++i) {
      cdf += pmf;
      if (cdf > tail) break;
      j = i;
      found = true;
      pmf = pmf * double(n - i) / double(i + 1);
    }
    if (!found) return {0, n - 1};
    return {j, n - 1 - j};
  }
  // Normal approximation for large n (within one rank of the exact answer there).
  const double half_width = k_z95 * std::sqrt(double(n)) / 2.0;
  const auto j = std::size_t(std::max(0.0, std::floor(double(n) / 2.0 - half_width - 1)));
  return {j, n - 1 - j};
}

}  // namespace

std::pair<std::size_t, std::size_t> median_ci_ranks(std::size_t n, double confidence) {
  if (confidence != 0.95) return compute_median_ci_ranks(n, confidence);
  // The adaptive sampler asks for the same n over and over; remember the answers.
  thread_local std::vector<std::pair<std::size_t, std::size_t>> cache;
  if (n < 4096) {
    if (cache.size() <= n) {
      const std::size_t from = cache.size();
      cache.resize(n + 1);
      for (std::size_t i = from; i <= n; ++i)
        cache[i] = compute_median_ci_ranks(i, 0.95);
    }
    return cache[n];
  }
  return compute_median_ci_ranks(n, confidence);
}

time_summary summarize(std::span<const double> samples) {
  time_summary s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  const double n = double(sorted.size());
  s.min = sorted.front();
  s.max = sorted.back();
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  double ss = 0;
  for (double x : sorted)
    ss += (x - s.mean) * (x - s.mean);
  s.stddev = sorted.size() > 1 ? std::sqrt(ss / (n - 1)) : 0.0;
  s.median = percentile_sorted(sorted, 50);
  s.p5 = percentile_sorted(sorted, 5);
  s.p95 = percentile_sorted(sorted, 95);
  s.p99 = percentile_sorted(sorted, 99);
  if (sorted.size() >= k_ci95_min_samples) {
    const auto [lo, hi] = median_ci_ranks(sorted.size());
    s.ci95_low = sorted[lo];
    s.ci95_high = sorted[hi];
    s.rel_noise = s.median > 0 ? (sorted[hi] - sorted[lo]) / (2 * k_z95 * s.median) : 0.0;
  }
  return s;
}

double relative_noise(std::span<double> scratch) {
  if (scratch.size() < k_ci95_min_samples) return std::numeric_limits<double>::infinity();
  const auto [lo, hi] = median_ci_ranks(scratch.size());
  const double median = select_median(scratch);
  std::nth_element(scratch.begin(), scratch.begin() + std::ptrdiff_t(lo), scratch.end());
  const double low = scratch[lo];
  std::nth_element(scratch.begin(), scratch.begin() + std::ptrdiff_t(hi), scratch.end());
  const double high = scratch[hi];
  return median > 0 ? (high - low) / (2 * k_z95 * median) : 0;
}

}  // namespace kernelscan

#include "engine/sample_loop.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <vector>

#include "engine/fault_phase.hpp"
#include "engine/statistics.hpp"

namespace kernelscan {

namespace {

// The fixed-cost probe: launches of its longer samples, rounds, and the share of each end its
// trimmed means drop. CUDA's events resolve about half a microsecond, so a median of lone
// launches of a few microseconds is quantised; a trimmed mean of many is not.
constexpr int k_fixed_cost_launches = 16;
constexpr int k_fixed_cost_rounds = 31;
constexpr double k_fixed_cost_trim = 0.2;
// The built-in kernel's samples timed launch by launch (builtin_launch_excess_us): those read,
// those that scale its steps first, the most steps, and its fills' first seed.
constexpr int k_spread_rounds = 15;
constexpr int k_spread_scalings = 3;
constexpr int k_spread_most_iterations = 1 << 20;
constexpr std::uint64_t k_spread_seed = 0x5b11ed;

// The launch a quarter of the way up `t` by rank (its lower quartile). Precondition: !t.empty().
double lower_quartile(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[(t.size() - 1) / 4];
}

double trimmed_mean(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto drop = std::size_t(double(v.size()) * k_fixed_cost_trim);
  double sum = 0;
  for (std::size_t i = drop; i < v.size() - drop; ++i)
    sum += v[i];
  return sum / double(v.size() - 2 * drop);
}

// Shifts every sample of `r` down by `by` and summarises them again.
void shift_samples(sampling_result& r, double by) {
  for (double& x : r.samples_us)
    x -= by;
  r.summary = summarize(r.samples_us);
}

// `step` of kernel `k`, which takes the blame for what it throws.
template <class Step>
auto as_kernel(timed_kernel& k, Step&& step) {
  try {
    return step();
  } catch (...) {
    k.threw = true;
    throw;
  }
}

}  // namespace

timed_sample take_sample(device_backend& backend, timed_kernel& k, bool cold) {
  if (k.before) k.before(k.batch, true);
  const std::uint64_t caches = backend.device().l2_bytes + backend.device().llc_bytes;
  if (cold || (caches > 0 && k.before_bytes > caches)) backend.flush_caches();
  const bool split = k.split && k.split();
  const timed_sample s = backend.time_launches(k.role, [&] {
    for (std::int64_t i = 0; i < k.batch; ++i) {
      k.launch();
      if (split) backend.mark_launch();
    }
  });
  if (k.after) k.after(s);
  return s;
}

launch_spread spread_of_launches(std::span<const std::vector<double>> samples, double fixed_us) {
  if (samples.empty() || samples.front().empty()) return {};
  const std::size_t launches = samples.front().size();
  std::vector<std::vector<double>> ratios(launches), excess(launches);
  std::vector<double> quartiles, t;
  for (const auto& sample : samples) {
    if (sample.size() != launches) continue;
    t = sample;
    t[0] = std::max(t[0] - fixed_us, t[0] / 2);
    const double quartile = lower_quartile(t);
    quartiles.push_back(quartile);
    for (std::size_t j = 0; j < launches; ++j) {
      ratios[j].push_back(t[j] / std::max(quartile, 1e-3));
      excess[j].push_back(t[j] - quartile);
    }
  }
  const auto median = [](std::vector<double>& x) {
    std::sort(x.begin(), x.end());
    return percentile_sorted(x, 50);
  };
  launch_spread worst{0, 0, median(quartiles)};
  for (std::size_t j = 0; j < launches; ++j) {
    const double r = median(ratios[j]);
    if (r > worst.ratio) worst = {r, median(excess[j]), worst.quartile_us};
  }
  return worst;
}

double builtin_launch_excess_us(device_backend& backend, std::int64_t launches,
                                std::uint64_t set_bytes, double launch_us, double fixed_us) {
  try {
    const std::int64_t threads = std::max<std::int64_t>(1, backend.device().compute_units) * 256;
    const device_buffer out = backend.allocate(std::uint64_t(threads) * sizeof(float));
    const std::int64_t n = std::max<std::int64_t>(64, std::int64_t(set_bytes / sizeof(float)));
    std::deque<device_buffer> sets;
    std::vector<fill_target> fills;
    for (std::int64_t j = 0; j < launches; ++j) {
      sets.push_back(backend.allocate(std::uint64_t(n) * sizeof(float)));
      fills.push_back({&sets.back(), {fill_kind::random, dtype::f32, n, 0, 0, 0}});
    }
    std::uint64_t seed = k_spread_seed;
    int iterations = 4;
    auto sample = [&] {
      for (auto& f : fills)
        f.request.seed = ++seed;
      backend.fill_all(fills);
      return backend.time_launches(kernel_role::baseline, [&] {
        for (std::int64_t i = 0; i < launches; ++i) {
          backend.fma(out, threads, iterations);
          backend.mark_launch();
        }
      });
    };
    // Launches as long as the kernel's lower quartile: the steps scaled by what samples read,
    // a few times (the launch's own cost besides its steps makes one scaling fall short).
    for (int scaling = 0; scaling < k_spread_scalings; ++scaling) {
      const timed_sample s = sample();
      if (std::size_t(launches) != s.launch_us.size()) return 0;
      const double quartile = lower_quartile(s.launch_us);
      if (!(quartile > 0)) break;
      iterations = int(std::clamp(double(iterations) * launch_us / quartile, 1.0,
                                  double(k_spread_most_iterations)));
    }
    std::vector<std::vector<double>> samples;
    for (int r = 0; r < k_spread_rounds; ++r) {
      const timed_sample s = sample();
      if (s.valid && std::size_t(launches) == s.launch_us.size()) samples.push_back(s.launch_us);
    }
    if (samples.size() * 2 < std::size_t(k_spread_rounds)) return 0;
    return spread_of_launches(samples, fixed_us).excess_us;
  } catch (const backend_error&) {
    return 0;
  }
}

double fixed_cost_us(device_backend& backend, fixed_cost_memo& memo) {
  const double now = backend.clock_ms();
  if (!memo || !memo->fresh(now)) memo = kept_measurement{sample_fixed_cost_us(backend), now};
  return memo->value;
}

double sample_fixed_cost_us(device_backend& backend) {
  try {
    // One block of 256 work-items a compute unit, a few steps each: a short kernel that reaches
    // every unit, as the kernels whose batches are held do.
    const std::int64_t threads = std::max<std::int64_t>(1, backend.device().compute_units) * 256;
    const device_buffer out = backend.allocate(std::uint64_t(threads) * sizeof(float));
    auto sample = [&](int launches) {
      return backend.time_launches(kernel_role::baseline, [&] {
        for (int i = 0; i < launches; ++i)
          backend.fma(out, threads, 4);
      });
    };
    backend.fma(out, threads, 4);
    backend.synchronize();
    std::vector<double> one, many;
    for (int r = 0; r < k_fixed_cost_rounds; ++r) {
      const timed_sample a = sample(1), b = sample(k_fixed_cost_launches);
      if (!a.valid || !b.valid) continue;
      one.push_back(a.time_us);
      many.push_back(b.time_us);
    }
    if (one.size() * 2 < std::size_t(k_fixed_cost_rounds)) return 0;
    const double b = k_fixed_cost_launches;
    return std::max(0.0, (b * trimmed_mean(one) - trimmed_mean(many)) / (b - 1));
  } catch (const backend_error&) {
    return 0;
  }
}

std::int64_t batch_for(double median_us, l2_mode l2) {
  if (l2 == l2_mode::cold) return 1;
  if (!(median_us > 0) || median_us >= k_batch_below_us) return 1;
  return std::clamp<std::int64_t>(std::int64_t(std::ceil(k_batch_sample_us / median_us)), 1,
                                  k_max_batch);
}

std::vector<sampling_result> sample_interleaved(device_backend& backend,
                                                std::span<timed_kernel> kernels,
                                                const timing_options& timing,
                                                fixed_cost_memo* memo) {
  const bool cold = timing.l2 == l2_mode::cold;
  {
    // Named apart from the timed launches that follow: a kernel that never ends its first
    // launch (and had no verification before it) is told so.
    const fault_phase phase("the warm-up launches, before any was timed");
    for (auto& k : kernels) {
      as_kernel(k, [&] {
        const int warmup = std::max(1, timing.warmup);
        if (k.before) k.before(warmup, false);
        for (int i = 0; i < warmup; ++i)
          k.launch();
        if (k.after) k.after(timed_sample{});
        backend.synchronize();
      });
    }
  }
  for (auto& k : kernels) {
    k.batch = 1;
    if (cold) continue;
    double t[3];
    for (double& x : t)
      x = as_kernel(k, [&] { return take_sample(backend, k, false).time_us; });
    std::sort(std::begin(t), std::end(t));
    k.single_us = t[1];
    k.batch = std::clamp<std::int64_t>(batch_for(t[1], timing.l2), 1,
                                       std::max<std::int64_t>(1, k.max_batch));
  }

  std::vector<adaptive_sampler> samplers(kernels.size(), adaptive_sampler(timing));
  const double started = backend.clock_ms();
  double last_reading = -k_telemetry_every_ms;
  bool throttled = false;
  for (;;) {
    const double now = backend.clock_ms();
    if (now - last_reading >= k_telemetry_every_ms) {
      if (auto reading = backend.read_telemetry()) throttled = reading->throttled();
      last_reading = now;
    }
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const timed_sample s =
          as_kernel(kernels[i], [&] { return take_sample(backend, kernels[i], cold); });
      fault_phase::count_sample();
      if (!s.launch_us.empty() && !backend.marks_are_free()) continue;  // timed with its marks
      samplers[i].add(s.time_us / double(kernels[i].batch), throttled, !s.valid);
    }
    const double elapsed = backend.clock_ms() - started;
    bool done = true;
    for (auto& s : samplers)
      done = s.should_stop(elapsed) && done;
    if (!done) continue;
    for (auto& k : kernels) {
      if (k.last) as_kernel(k, [&] { k.last(k, cold); });
    }
    break;
  }
  std::vector<sampling_result> out;
  out.reserve(samplers.size());
  for (auto& s : samplers)
    out.push_back(s.finish());

  // Batches held below the free one, corrected to it (the header). The free batch is the one a
  // lone launch of the kernel asks for, as its samples put it (their time per launch less the
  // fixed cost's share, plus the whole fixed cost), not as its probes read: a kernel fast only
  // while probed alone cannot raise it.
  fixed_cost_memo local;
  fixed_cost_memo& fixed_cost = memo ? *memo : local;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const timed_kernel& k = kernels[i];
    sampling_result& r = out[i];
    if (cold || !k.corrects_held_batch || r.samples_us.empty()) continue;
    // Not held when the batch was decided: nothing to correct (and nothing to measure).
    if (k.batch >= batch_for(k.single_us, timing.l2)) continue;
    const double cost = fixed_cost_us(backend, fixed_cost);
    const double b = double(k.batch);
    const std::int64_t free = batch_for(r.summary.median - cost / b + cost, timing.l2);
    if (k.batch >= free) continue;
    // Never more than half the fastest sample's time per launch, of which the fixed cost's share
    // is a part.
    const double by = std::min(cost * (1.0 / b - 1.0 / double(free)), r.summary.min / 2);
    if (!(by > 0)) continue;
    r.batch_corrected = batch_correction{free, cost, by};
    shift_samples(r, by);
  }
  return out;
}

}  // namespace kernelscan

#include "engine/sample_loop.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace kernelscan {

timed_sample take_sample(device_backend& backend, timed_kernel& k, bool cold) {
  if (k.before) k.before(k.batch, true);
  const std::uint64_t caches = backend.device().l2_bytes + backend.device().llc_bytes;
  if (cold || (caches > 0 && k.before_bytes > caches)) backend.flush_caches();
  const timed_sample s = backend.time_launches(k.role, [&k] {
    for (std::int64_t i = 0; i < k.batch; ++i)
      k.launch();
  });
  if (k.after) k.after();
  return s;
}

std::int64_t batch_for(double median_us, l2_mode l2) {
  if (l2 == l2_mode::cold) return 1;
  if (!(median_us > 0) || median_us >= k_batch_below_us) return 1;
  return std::clamp<std::int64_t>(std::int64_t(std::ceil(k_batch_sample_us / median_us)), 1,
                                  k_max_batch);
}

namespace {

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

std::vector<sampling_result> sample_interleaved(device_backend& backend,
                                                std::span<timed_kernel> kernels,
                                                const timing_options& timing) {
  const bool cold = timing.l2 == l2_mode::cold;
  for (auto& k : kernels) {
    as_kernel(k, [&] {
      const int warmup = std::max(1, timing.warmup);
      if (k.before) k.before(warmup, false);
      for (int i = 0; i < warmup; ++i)
        k.launch();
      if (k.after) k.after();
      backend.synchronize();
    });
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
      samplers[i].add(s.time_us / double(kernels[i].batch), throttled, !s.valid);
    }
    const double elapsed = backend.clock_ms() - started;
    bool done = true;
    for (auto& s : samplers)
      done = s.should_stop(elapsed) && done;
    if (done) break;
  }
  std::vector<sampling_result> out;
  out.reserve(samplers.size());
  for (auto& s : samplers)
    out.push_back(s.finish());
  return out;
}

}  // namespace kernelscan

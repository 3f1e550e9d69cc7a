#include "engine/roofline_benchmark.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <spdlog/spdlog.h>

#include "engine/job.hpp"
#include "engine/point_kernel.hpp"
#include "engine/sample_loop.hpp"

namespace kernelscan {
namespace {

constexpr std::int64_t k_max_triad = std::int64_t(1) << 28;
constexpr std::int64_t k_probe_triad = std::int64_t(1) << 22;
constexpr std::int64_t k_min_stream = std::int64_t(1) << 16;
constexpr std::int64_t k_max_gemm = 8192;
constexpr std::int64_t k_probe_gemm = 256;
constexpr int k_probe_iterations = 256;
constexpr double k_memory_share = 0.25;  // of free memory, for the benchmarks' buffers

timing_options benchmark_timing(l2_mode l2) {
  timing_options t;
  t.l2 = l2;
  t.warmup = 1;
  t.min_samples = 10;
  t.min_time_ms = 0;
  t.max_time_ms = 300;
  return t;
}

void fill_inputs(device_backend& backend, point_kernel& k) {
  std::uint64_t seed = 1;
  for (auto& b : k.buffers())
    backend.fill(b.mem, {fill_kind::random, b.type, b.count, mix64(++seed), 0});
}

// The best time of one launch of `k`, sampled as a point is. A ceiling is what the device can
// reach, so like STREAM it takes the fastest sample, not the typical one: interference from other
// work on the machine only ever makes samples slower.
double best_us(device_backend& backend, point_kernel& k, l2_mode l2) {
  fill_inputs(backend, k);
  const buffer_set buffers = k.own_buffers();
  timed_kernel t{[&] { k.launch(buffers); }, kernel_role::candidate};
  const auto sampled = sample_interleaved(backend, std::span(&t, 1), benchmark_timing(l2));
  if (sampled[0].samples_us.empty()) {
    throw backend_error(fault_kind::internal, "every sample of a roofline benchmark was discarded");
  }
  return sampled[0].summary.min;
}

// One probe launch's time, a cheap first guess at the scale of a benchmark.
double probe_us(device_backend& backend, point_kernel& k, l2_mode l2) {
  timing_options t = benchmark_timing(l2);
  t.min_samples = 1;
  t.max_samples = 1;
  fill_inputs(backend, k);
  const buffer_set buffers = k.own_buffers();
  timed_kernel tk{[&] { k.launch(buffers); }, kernel_role::candidate};
  const auto sampled = sample_interleaved(backend, std::span(&tk, 1), t);
  return sampled[0].samples_us.empty() ? 0 : sampled[0].summary.median;
}

std::string power_of_two(std::int64_t n) {
  return "2^" + std::to_string(std::llround(std::log2(double(n))));
}

std::int64_t round_down_to(std::int64_t v, std::int64_t step) {
  return std::max(step, v / step * step);
}

class benchmark {
 public:
  explicit benchmark(device_backend& backend)
      : m_backend(backend), m_budget(double(backend.free_memory()) * k_memory_share) {}

  // The largest f32 triad (elements) this device's memory takes: a power of two.
  std::int64_t triad_cap() const {
    const double limit = std::min(m_budget / 3, double(m_backend.max_allocation())) / 4;
    return std::int64_t(1) << std::int64_t(
               std::floor(std::log2(std::min(double(k_max_triad), std::max(limit, 1.0)))));
  }

  // Bandwidth in GB/s of a cold f32 triad; `n` is set to its (larger) size.
  double triad(std::int64_t& n) {
    stream_instance s;
    s.variant = stream_variant::triad;
    s.type = dtype::f32;
    const std::int64_t cap = triad_cap();
    s.n = std::min(k_probe_triad, cap);
    s.n = grow(
        s.n, cap, 1,
        [](std::int64_t size) {
          return std::int64_t(1) << std::int64_t(std::floor(std::log2(double(size))));
        },
        [&](std::int64_t size) {
          stream_instance p = s;
          p.n = size;
          return probe(p, l2_mode::cold);
        });
    n = s.n;
    // The best of the triad at the chosen size and at a quarter of it, and of a copy: a smaller
    // cold working set can stream faster where the caches are large, and some memory systems
    // copy faster than they triad; no STREAM kernel of those sizes may beat the ceiling.
    double best = 0;
    for (const auto& [variant, size] :
         {std::pair{stream_variant::triad, s.n}, std::pair{stream_variant::triad, s.n / 4},
          std::pair{stream_variant::copy, s.n}}) {
      if (size < k_min_stream || (size != s.n && size < k_probe_triad / 4)) continue;
      best = std::max(best, stream(variant, size));
    }
    return best;
  }

  // Bandwidth in GB/s of a cold f32 STREAM kernel over `n` elements, its best sample.
  double stream(stream_variant variant, std::int64_t n) {
    stream_instance s;
    s.variant = variant;
    s.type = dtype::f32;
    s.n = n;
    const kernel_instance instance = s;
    point_kernel k(m_backend, instance);
    return workload_bytes(instance) / (best_us(m_backend, k, l2_mode::cold) * 1e3);
  }

  // TFLOP/s of a GEMM of `t` (hot: it is compute-bound, and a cold flush per sample would cost
  // more than the GEMM on a CPU); `n` is set to its size, 0 when the device cannot run it.
  double gemm(dtype t, gemm_impl impl, std::int64_t& n) {
    n = 0;
    gemm_instance g;
    g.type = t;
    g.impl = impl;
    const double width = double(size_of(t));
    const double by_memory = std::sqrt(m_budget / 3 / width);
    const double by_allocation = std::sqrt(double(m_backend.max_allocation()) / width);
    const auto limit = std::int64_t(std::min({by_memory, by_allocation, double(k_max_gemm)}));
    const std::int64_t cap = limit >= 256 ? round_down_to(limit, 256) : round_down_to(limit, 64);
    try {
      g.m = grow(
          std::min(k_probe_gemm, cap), cap, 3,
          [&](std::int64_t size) {
            return size >= 256 ? round_down_to(size, 256) : round_down_to(size, 64);
          },
          [&](std::int64_t size) {
            gemm_instance p = g;
            p.m = p.n = p.k = size;
            return probe(p, l2_mode::hot);
          });
      g.n = g.k = g.m;
      const kernel_instance instance = g;
      point_kernel k(m_backend, instance);
      const double tflops = workload_flops(instance) / (best_us(m_backend, k, l2_mode::hot) * 1e6);
      n = g.m;
      return tflops;
    } catch (const backend_error& e) {
      if (e.kind() != fault_kind::unsupported) throw;
      return 0;  // the device cannot run a GEMM of this type
    }
  }

  // TFLOP/s of the FMA kernel.
  double fma() {
    const std::int64_t threads =
        std::max<std::int64_t>(1, m_backend.device().compute_units) * 2048 * 4;
    device_buffer out = m_backend.allocate(std::uint64_t(threads) * sizeof(float));
    int iterations = k_probe_iterations;
    timing_options t = benchmark_timing(l2_mode::hot);
    timed_kernel k{[&] { m_backend.fma(out, threads, iterations); }, kernel_role::candidate};
    {
      timing_options probe = t;
      probe.min_samples = probe.max_samples = 1;
      const auto s = sample_interleaved(m_backend, std::span(&k, 1), probe);
      if (!s[0].samples_us.empty() && s[0].summary.median > 0) {
        const double grow = k_roofline_target_ms * 1e3 / s[0].summary.median;
        iterations = int(std::clamp(double(iterations) * grow, 256.0, 65536.0));
      }
    }
    const auto s = sample_interleaved(m_backend, std::span(&k, 1), t);
    if (s[0].samples_us.empty()) {
      throw backend_error(fault_kind::internal, "every sample of the FMA benchmark was discarded");
    }
    return double(threads) * iterations * 16 / (s[0].summary.min * 1e6);
  }

 private:
  // The size at which one launch takes about k_roofline_target_ms: from `size`, probe and scale
  // by the time's `power`-th root (work grows as size^power), rounded by `round`, until the size
  // stops growing or reaches `cap`. A launch-bound probe underestimates how far a fast device
  // can go, so the size is probed again after each step.
  template <typename Round, typename Probe>
  std::int64_t grow(std::int64_t size, std::int64_t cap, int power, Round round, Probe probe_at) {
    for (int step = 0; step < 4 && size < cap; ++step) {
      const double t = probe_at(size);
      if (!(t > 0)) break;
      const double scale = std::pow(k_roofline_target_ms * 1e3 / t, 1.0 / power);
      if (scale < 1.5) break;
      size = std::min(cap, round(std::int64_t(double(size) * scale)));
    }
    return size;
  }

  double probe(const kernel_instance& instance, l2_mode l2) {
    point_kernel k(m_backend, instance);
    return probe_us(m_backend, k, l2);
  }

  device_backend& m_backend;
  double m_budget;
};

}  // namespace

measured_roofline run_roofline_benchmark(device_backend& backend) {
  static const mock_options no_mock_options;
  backend.begin_point(
      {0, mix64(0x5eed0000ull + std::uint64_t(backend.device().index)), &no_mock_options});
  benchmark bench(backend);
  measured_roofline r;
  std::int64_t triad_n = 0;
  r.peaks.bandwidth_gbps = bench.triad(triad_n);
  spdlog::debug("roofline: stream triad 2^{}: {:.1f} GB/s",
                std::llround(std::log2(double(triad_n))), r.peaks.bandwidth_gbps);

  std::string gemms;
  auto gemm = [&](dtype t) {
    const bool library = backend.supports_gemm(gemm_algorithm::library, t);
    std::int64_t n = 0;
    const double tflops = bench.gemm(t, library ? gemm_impl::library : gemm_impl::builtin, n);
    spdlog::debug("roofline: {} gemm {}^3: {:.3f} TFLOP/s", to_string(t), n, tflops);
    gemms += (gemms.empty() ? "" : ", ") + std::string(to_string(t)) + " ";
    gemms += n ? std::string(library ? "library " : "builtin ") + std::to_string(n) + "^3"
               : "not supported";
    return tflops;
  };
  r.peaks.f64_tflops = gemm(dtype::f64);
  r.peaks.f32_tflops = gemm(dtype::f32);
  r.peaks.f16_tflops = gemm(dtype::f16);
  r.peaks.bf16_tflops = gemm(dtype::bf16);
  r.peaks.vector_f32_tflops = bench.fma();
  const auto& d = backend.device();
  const bool scaled = d.datasheet && d.datasheet->f16_tflops > 0;
  if (scaled) {
    r.peaks.i8_tops = d.datasheet->i8_tops * r.peaks.f16_tflops / d.datasheet->f16_tflops;
  }

  r.measured_ms = unix_time_ms();
  const std::string library = backend.gemm_library();
  r.method = std::string(backend.runs_device_code() ? "" : "simulated (mock engine): ") +
             "stream triad " + power_of_two(triad_n) + " f32 (cold); gemm (hot) " + gemms +
             (library.empty() ? "" : " (library: " + library + ")") + "; fma" +
             (scaled ? "; i8 scaled from the f16 share of the datasheet" : "; no i8 ceiling");
  return r;
}

double stream_bandwidth_gbps(device_backend& backend, double bytes) {
  benchmark bench(backend);
  const double elements = bytes / (3 * sizeof(float));
  const std::int64_t n =
      std::max(k_min_stream, std::min(std::int64_t(elements), bench.triad_cap()));
  return bench.stream(stream_variant::triad, n);
}

double fma_tflops(device_backend& backend) {
  benchmark bench(backend);
  return bench.fma();
}

}  // namespace kernelscan

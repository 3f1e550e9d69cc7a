#include "engine/mock_engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <random>
#include <thread>

#include "engine/adaptive_sampler.hpp"
#include "engine/job.hpp"
#include "engine/metrics.hpp"

namespace kernelscan {
namespace {

constexpr double k_noise_sigma = 0.008;       // log-normal sigma of a sample
constexpr double k_outlier_rate = 0.02;       // share of samples hit by interference
constexpr double k_host_overhead_us = 4.0;    // per sample: event record, readback
constexpr double k_memory_efficiency = 0.88;  // best achievable share of peak bandwidth

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

[[noreturn]] void inject_fault(mock_fault f) {
  switch (f) {
    case mock_fault::crash:
      std::raise(SIGSEGV);
      break;
    case mock_fault::abort:
      std::abort();
    case mock_fault::hang:
    case mock_fault::none:
      break;
  }
  for (;;)
    std::this_thread::sleep_for(std::chrono::hours(1));
}

// Output elements a kernel writes: what a real check compares.
double output_elements(const kernel_instance& k) {
  if (const auto* g = std::get_if<gemm_instance>(&k)) return double(g->m) * double(g->n);
  if (const auto* s = std::get_if<stream_instance>(&k)) return double(s->n);
  double n = 0;
  for (const auto& a : std::get<custom_instance>(k).args) {
    if (a.pointer && a.output) n += double(a.count);
  }
  return n;
}

// What verifying the output mock.output describes would report.
verification_result simulate_verification(const job_spec& spec, const kernel_instance& k,
                                          std::mt19937_64& rng) {
  verification_result v;
  if (!spec.mock.output) {
    v.note = "the mock engine cannot run device code";
    return v;
  }
  const auto* c = std::get_if<custom_instance>(&k);
  if (c && !c->reference) {
    v.note = "the kernel has no reference to compare with";
    return v;
  }
  if (spec.verify.trials == 0) {
    v.note = "verify.trials is 0";
    return v;
  }
  const dtype t = roof_dtype(k);
  v.tolerance = spec.verify.rtol.value_or(default_tolerance(t));
  v.trials = spec.verify.trials;
  const std::string& out = *spec.mock.output;
  std::uniform_real_distribution<double> share(0.001, 0.01);
  v.status = out == "correct" ? "passed" : "failed";
  if (out == "correct") {
    v.max_rel_err = v.tolerance * share(rng);
  } else if (out == "wrong") {
    v.max_rel_err = 0.5 + share(rng);
    v.note = "outputs differ from the reference (simulated)";
  } else if (out == "low_precision") {
    // Errors of half-precision arithmetic: within f16's tolerance, far outside f32's.
    v.max_rel_err = default_tolerance(dtype::f16) * (0.1 + 10 * share(rng));
    v.note = "outputs differ from the reference (simulated)";
  } else {
    const double n = output_elements(k);
    v.unwritten = std::uint64_t(out == "unwritten" ? n : std::ceil(n / 2));
    v.note = std::to_string(v.unwritten) + " output elements were never written (simulated)";
  }
  v.max_abs_err = v.max_rel_err;  // inputs of magnitude ~1
  return v;
}

}  // namespace

mock_engine::mock_engine(const device_model& model, int index) : m_model(model) {
  m_info.index = index;
  m_info.engine = engine_kind::mock;
  m_info.vendor = std::string(model.vendor);
  m_info.name = std::string(model.name) + " (mock)";
  m_info.arch = std::string(model.arch);
  m_info.model = std::string(model.key);
  m_info.compute_units = model.compute_units;
  m_info.clock_mhz = model.clock_mhz;
  m_info.memory_bytes = model.memory_bytes;
  m_info.l2_bytes = model.l2_bytes;
  m_info.llc_bytes = model.llc_bytes;
  m_info.driver = "kernelscan-mock";
  m_info.datasheet = model.peaks;
  m_analysis.datasheet = model.peaks;
  m_analysis.launch_latency_us = model.launch_latency_us;
  m_analysis.cache_bytes = model.l2_bytes + model.llc_bytes;
}

measured_roofline mock_engine::measure_roofline() {
  // What the micro-benchmarks of a GPU would reach on this model: a cold 3 GiB f32 triad for
  // bandwidth, a library GEMM of 8192^3 per floating dtype, and FMA kernels (90% of the vector
  // peak; the i8 rate as the f16 GEMM's share of its peak). Seeded noise of ~0.5%.
  std::mt19937_64 rng(splitmix64(0x5eed0000ull + std::uint64_t(m_info.index)));
  std::normal_distribution<double> normal(0.0, 0.005);
  auto noisy = [&](double v) { return v * std::exp(normal(rng)); };
  auto gemm_tflops = [&](dtype t) {
    gemm_instance g;
    g.m = g.n = g.k = 8192;
    g.type = t;
    return noisy(workload_flops(g) / (model_time_us(g, l2_mode::cold) * 1e6));
  };
  stream_instance triad;
  triad.n = std::int64_t(1) << 28;
  measured_roofline r;
  r.peaks.bandwidth_gbps =
      noisy(workload_bytes(triad) / (model_time_us(triad, l2_mode::cold) * 1e3));
  r.peaks.f64_tflops = gemm_tflops(dtype::f64);
  r.peaks.f32_tflops = gemm_tflops(dtype::f32);
  r.peaks.f16_tflops = gemm_tflops(dtype::f16);
  r.peaks.bf16_tflops = gemm_tflops(dtype::bf16);
  r.peaks.i8_tops = noisy(m_model.peaks.i8_tops * r.peaks.f16_tflops / m_model.peaks.f16_tflops);
  r.peaks.vector_f32_tflops = noisy(0.9 * m_model.peaks.vector_f32_tflops);
  r.measured_ms = unix_time_ms();
  r.method = "simulated (mock engine): stream triad 2^28 f32, library gemm 8192^3, fma";
  set_roofline(r);
  return r;
}

void mock_engine::set_roofline(const measured_roofline& roofline) {
  m_info.measured = roofline;
  m_analysis.measured = roofline.peaks;
}

double mock_engine::model_time_us(const kernel_instance& k, l2_mode l2) const {
  const auto& peaks = m_model.peaks;
  const double flops = workload_flops(k);
  const double bytes = workload_bytes(k);
  const double units_per_device = double(m_model.compute_units);

  double t_compute = 0;
  if (const auto* g = std::get_if<gemm_instance>(&k)) {
    // 128x128 output tiles; a short K does not amortise a tile's prologue and epilogue (as if
    // K were 64 longer). A simple kernel runs whole tiles in waves over the compute units, so
    // a partial last wave costs a full one. A library balances the tiles' K iterations over
    // every unit (stream-K), down to one 256-deep chunk per unit. Either way time never drops
    // as the problem grows.
    constexpr double tile = 128;
    const double tiles = std::ceil(double(g->m) / tile) * std::ceil(double(g->n) / tile);
    const double depth = double(g->k);
    double k_steps_per_unit = 0;  // K iterations the busiest unit runs
    if (g->impl == gemm_impl::library) {
      k_steps_per_unit =
          std::max(tiles * (depth + 64) / units_per_device, std::min(depth, 256.0) + 64);
    } else {
      k_steps_per_unit = std::ceil(tiles / units_per_device) * (depth + 64);
    }
    const double efficiency = g->impl == gemm_impl::library ? 0.82 : 0.30;
    const double unit_tflops = peaks.tflops_for(g->type) * efficiency / units_per_device;
    t_compute = 2 * tile * tile * k_steps_per_unit / (unit_tflops * 1e6);
  } else {
    const double rate = std::holds_alternative<stream_instance>(k) ? 0.8 : 0.6;
    t_compute = flops / (peaks.vector_f32_tflops * rate * 1e6);
  }

  // Small transfers do not reach full bandwidth; caches serve a hot working set that fits.
  double bandwidth_gbps = peaks.bandwidth_gbps * k_memory_efficiency * bytes / (bytes + 4e6);
  const std::uint64_t cache = m_model.llc_bytes ? m_model.llc_bytes : m_model.l2_bytes;
  if (l2 == l2_mode::hot && bytes <= double(cache)) bandwidth_gbps *= 2.2;
  const double t_memory = bandwidth_gbps > 0 ? bytes / (bandwidth_gbps * 1e3) : 0;
  return m_model.launch_latency_us + std::max(t_compute, t_memory);
}

point_result mock_engine::measure(const job_plan& plan, std::uint64_t index, std::uint64_t seed) {
  const auto& spec = plan.spec();
  kernel_instance instance;
  std::optional<kernel_instance> baseline;
  try {
    instance = plan.resolve(index);
    baseline = plan.resolve_baseline(index);
  } catch (const plan_error& e) {
    auto r = failed_point(index, plan.params(index), "invalid_point", e.what());
    r.l2 = spec.timing.l2;
    r.environment.device = m_info.name;
    r.environment.driver = m_info.driver;
    return r;
  }

  if (spec.mock.fault != mock_fault::none &&
      (!spec.mock.fault_index || *spec.mock.fault_index == index)) {
    inject_fault(spec.mock.fault);
  }
  if (spec.mock.delay_ms > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(spec.mock.delay_ms));
  }

  const auto& timing = spec.timing;
  const double t_model = model_time_us(instance, timing.l2) / spec.mock.speedup;
  const double t_baseline = baseline ? model_time_us(*baseline, timing.l2) : 0.0;
  // A cold sample first flushes the caches by writing a buffer as large as them (untimed but
  // spent); the simulated clock counts it.
  const double cache_bytes = double(m_model.l2_bytes + m_model.llc_bytes);
  const double flush_us =
      timing.l2 == l2_mode::cold ? cache_bytes / (m_model.peaks.bandwidth_gbps * 1e3) : 0.0;

  std::mt19937_64 rng(splitmix64(seed ^ splitmix64(index + 1)));
  std::normal_distribution<double> normal(0.0, k_noise_sigma);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  auto sample = [&](double model_us) {
    double t = model_us * std::exp(normal(rng));
    if (uniform(rng) < k_outlier_rate) t *= 1.05 + 0.25 * uniform(rng);
    return t;
  };

  for (int i = 0; i < timing.warmup; ++i) {
    (void)sample(t_model);
    if (baseline) (void)sample(t_baseline);
  }
  // With a baseline, samples alternate A/B/A/B so that both see the same drift; the measurement
  // ends when both have met the stopping rule in the same round.
  adaptive_sampler sampler(timing);
  std::optional<adaptive_sampler> baseline_sampler;
  if (baseline) baseline_sampler.emplace(timing);
  double elapsed_us = 0;
  for (;;) {
    const double t = sample(t_model);
    sampler.add(t);
    elapsed_us += t + flush_us + k_host_overhead_us;
    if (baseline_sampler) {
      const double tb = sample(t_baseline);
      baseline_sampler->add(tb);
      elapsed_us += tb + flush_us + k_host_overhead_us;
    }
    const bool done = sampler.should_stop(elapsed_us / 1e3);
    const bool baseline_done = !baseline_sampler || baseline_sampler->should_stop(elapsed_us / 1e3);
    if (done && baseline_done) break;
  }
  auto sampled = sampler.finish();
  std::optional<speedup_estimate> speedup;
  if (baseline_sampler) {
    const auto base = baseline_sampler->finish();
    speedup = paired_speedup(sampled.samples_us, base.samples_us);
  }

  point_result r;
  r.index = index;
  r.params = plan.params(index);
  r.status = point_status::ok;
  r.simulated = true;
  r.time_us = sampled.summary;
  r.samples = sampled.samples_us.size();
  r.discarded = sampled.discarded;
  r.converged = sampled.converged;
  r.stop_reason = sampled.stop_reason;
  r.sampling_ms = sampled.elapsed_ms;
  r.l2 = timing.l2;
  r.verification = simulate_verification(spec, instance, rng);
  r.environment.device = m_info.name;
  r.environment.driver = m_info.driver;
  r.environment.clock_mhz = m_model.clock_mhz;
  analyse_point(r, instance, spec, m_analysis, speedup);
  return r;
}

}  // namespace kernelscan

#include "engine/mock_engine.hpp"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "engine/metrics.hpp"

namespace kernelscan {
namespace {

constexpr double k_noise_sigma = 0.008;       // log-normal sigma of a sample
constexpr double k_outlier_rate = 0.02;       // share of samples hit by interference
constexpr double k_host_overhead_us = 4.0;    // per sample: event record, readback
constexpr double k_memory_efficiency = 0.88;  // best achievable share of peak bandwidth
constexpr double k_fma_efficiency = 0.9;      // share of the vector peak an FMA kernel reaches

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

}  // namespace

mock_backend::mock_backend(const device_model& model, int index) : m_model(model) {
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
  m_info.capabilities.gemm_library = "simulated";
  m_info.datasheet = model.peaks;
}

bool mock_backend::supports_gemm(gemm_algorithm, dtype t) const {
  return t == dtype::f64 || t == dtype::f32 || t == dtype::f16 || t == dtype::bf16;
}

void mock_backend::begin_point(const point_context& point) {
  // Nothing carries over between points: the same seed gives the same measurement.
  m_rng.seed(point.seed);
  m_clock_us = 0;
  m_options = point.mock;
  m_pending_us = 0;
  m_flushed = false;
  if (!m_options) return;
  if (m_options->fault != mock_fault::none &&
      (!m_options->fault_index || *m_options->fault_index == point.index)) {
    inject_fault(m_options->fault);
  }
  if (m_options->delay_ms > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(m_options->delay_ms));
  }
}

// What verifying the output mock.output describes would report.
verification_result mock_backend::simulate_verification(const job_spec& spec,
                                                        const kernel_instance& k) {
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
    v.max_rel_err = v.tolerance * share(m_rng);
  } else if (out == "wrong") {
    v.max_rel_err = 0.5 + share(m_rng);
    v.note = "outputs differ from the reference (simulated)";
  } else if (out == "low_precision") {
    // Errors of half-precision arithmetic: within f16's tolerance, far outside f32's.
    v.max_rel_err = default_tolerance(dtype::f16) * (0.1 + 10 * share(m_rng));
    v.note = "outputs differ from the reference (simulated)";
  } else {
    const double n = output_elements(k);
    v.unwritten = std::uint64_t(out == "unwritten" ? n : std::ceil(n / 2));
    v.note = std::to_string(v.unwritten) + " output elements were never written (simulated)";
  }
  v.max_abs_err = v.max_rel_err;  // inputs of magnitude ~1
  return v;
}

device_buffer mock_backend::allocate_guarded(std::uint64_t bytes, std::uint64_t guard) {
  const std::uintptr_t h = m_next_handle++;
  return device_buffer(this, h, bytes, bytes ? guard : 0, h);
}

void mock_backend::read_guard(const device_buffer& b, guard_side, void* dst) {
  std::memset(dst, 0, b.guard());
}

void mock_backend::read(const device_buffer&, std::uint64_t, void* dst, std::uint64_t bytes) {
  std::memset(dst, 0, bytes);
}

void mock_backend::launched(double model_us) {
  m_pending_us += model_us;
}

void mock_backend::launch(const kernel_call& call) {
  launched(model_time_us(*call.kernel, m_flushed ? l2_mode::cold : l2_mode::hot));
}

void mock_backend::gemm(const gemm_call& call) {
  launched(model_time_us(*call.gemm, m_flushed ? l2_mode::cold : l2_mode::hot));
}

void mock_backend::stream(const stream_call& call) {
  launched(model_time_us(*call.stream, m_flushed ? l2_mode::cold : l2_mode::hot));
}

void mock_backend::fma(const device_buffer&, std::int64_t threads, int iterations) {
  const double flops = double(threads) * iterations * 16;
  launched(m_model.launch_latency_us +
           flops / (m_model.peaks.vector_f32_tflops * k_fma_efficiency * 1e6));
}

void mock_backend::flush_caches() {
  // Writing a buffer as large as the caches: untimed but spent.
  const double cache_bytes = double(m_model.l2_bytes + m_model.llc_bytes);
  m_clock_us += cache_bytes / (m_model.peaks.bandwidth_gbps * 1e3);
  m_flushed = true;
}

timed_sample mock_backend::time_launches(kernel_role role, const std::function<void()>& enqueue) {
  m_pending_us = 0;
  enqueue();
  double model_us = m_pending_us;
  m_pending_us = 0;
  m_flushed = false;
  if (role == kernel_role::candidate && m_options && m_options->speedup > 0) {
    model_us /= m_options->speedup;
  }
  std::normal_distribution<double> normal(0.0, k_noise_sigma);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  double t = model_us * std::exp(normal(m_rng));
  if (uniform(m_rng) < k_outlier_rate) t *= 1.05 + 0.25 * uniform(m_rng);
  m_clock_us += t + k_host_overhead_us;
  return {t, true, {}};
}

double mock_backend::model_time_us(const kernel_instance& k, l2_mode l2) const {
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

mock_engine::mock_engine(const device_model& model, int index)
    : point_runner(std::make_unique<mock_backend>(model, index)),
      m_mock(static_cast<mock_backend*>(&backend())) {}

}  // namespace kernelscan

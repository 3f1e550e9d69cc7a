#include "engine/point_runner.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "engine/device_catalog.hpp"
#include "engine/fill_pattern.hpp"
#include "engine/fitness.hpp"
#include "engine/job_plan.hpp"
#include "engine/language_support.hpp"
#include "engine/output_check.hpp"
#include "engine/point_kernel.hpp"
#include "engine/roofline_benchmark.hpp"
#include "engine/sample_loop.hpp"

namespace kernelscan {
namespace {

constexpr std::int64_t k_compare_chunk = std::int64_t(1) << 20;  // elements per read
constexpr double k_memory_headroom = 0.95;  // share of free memory a point may take
constexpr std::uint64_t k_trial_salt = 0x7e57;
constexpr std::uint64_t k_baseline_salt = 0xba5e;

std::string format_tolerance(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

}  // namespace

std::string point_error_type(fault_kind kind) {
  switch (kind) {
    case fault_kind::device_lost:
      return "device_fault";
    case fault_kind::out_of_memory:
      return "out_of_memory";
    case fault_kind::invalid_launch:
      return "invalid_point";
    case fault_kind::unsupported:
      return "unsupported";
    case fault_kind::internal:
      return "internal";
  }
  return "internal";
}

point_runner::point_runner(std::unique_ptr<device_backend> backend)
    : m_backend(std::move(backend)), m_info(m_backend->device()) {
  if (m_info.datasheet) m_analysis.datasheet = *m_info.datasheet;
  m_analysis.launch_latency_us = m_backend->launch_latency_us();
  m_analysis.cache_bytes = m_info.l2_bytes + m_info.llc_bytes;
  if (m_info.type == "cpu") m_analysis.roofline_allowance = k_cpu_roofline_allowance;
}

point_runner::~point_runner() = default;

void point_runner::check_memory(double need, const std::string& what) {
  const double free = double(m_backend->free_memory());
  if (need > free * k_memory_headroom) {
    throw backend_error(fault_kind::out_of_memory,
                        what + " needs " + gib(need) + " of device memory; " + gib(free) + " of " +
                            gib(double(m_info.memory_bytes)) + " is free");
  }
}

void point_runner::init_inputs(point_kernel& k, std::uint64_t seed, int pattern) {
  auto& buffers = k.buffers();
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    auto& b = buffers[i];
    fill_request f;
    f.type = b.type;
    f.count = b.count;
    f.seed = mix64(seed ^ mix64(i + 1));
    f.pattern = pattern;
    switch (b.init) {
      case arg_init::none:
        f.kind = b.output ? fill_kind::unwritten : fill_kind::random;
        break;
      case arg_init::random:
        f.kind = fill_kind::random;
        break;
      case arg_init::zeros:
        f.kind = fill_kind::value;
        f.value = 0;
        break;
      case arg_init::ones:
        f.kind = fill_kind::value;
        f.value = 1;
        break;
      case arg_init::arange:
        f.kind = fill_kind::arange;
        break;
    }
    m_backend->fill(b.mem, f);
  }
}

verification_result point_runner::verify(point_kernel& k, const job_spec& spec,
                                         std::uint64_t seed) {
  verification_result v;
  if (spec.verify.trials == 0) {
    v.note = "verify.trials is 0";
    return v;
  }
  if (!k.has_reference()) {
    v.note = "the kernel has no reference to compare with";
    return v;
  }
  const double tol = default_tolerance(k.out_type());
  const double atol = spec.verify.atol.value_or(tol);
  const double rtol = spec.verify.rtol.value_or(tol);
  v.tolerance = rtol;
  output_errors e;
  std::vector<unsigned char> out;
  const auto own = k.own_buffers();
  // The trials alternate the two unwritten patterns from one the point's seed picks, so a
  // kernel that recognises one poison and writes only where it sees it fails on the other.
  const int first_pattern = int(mix64(seed ^ k_trial_salt) & 1);
  for (int trial = 0; trial < spec.verify.trials; ++trial) {
    const int pattern = (first_pattern + trial) % 2;
    init_inputs(k, mix64(seed ^ mix64(k_trial_salt + std::uint64_t(trial))), pattern);

    // The reference's answer, on the host: it runs on its own copies of the outputs (in their
    // initial state) and the copies are freed before the kernel runs.
    std::vector<std::vector<unsigned char>> answers(k.buffers().size());
    {
      std::vector<device_buffer> copies;
      buffer_set ref = own;
      for (std::size_t i = 0; i < k.buffers().size(); ++i) {
        const auto& b = k.buffers()[i];
        if (!b.output) continue;
        copies.push_back(m_backend->allocate(b.bytes()));
        m_backend->copy(copies.back(), b.mem, b.bytes());
        ref[i] = &copies.back();
      }
      // `copies` does not reallocate past this point: the pointers in `ref` stay valid.
      k.launch_reference(ref);
      for (std::size_t i = 0; i < k.buffers().size(); ++i) {
        const auto& b = k.buffers()[i];
        if (!b.output) continue;
        answers[i].resize(b.bytes());
        m_backend->read(*ref[i], 0, answers[i].data(), b.bytes());
      }
    }

    k.launch(own);
    m_backend->synchronize();
    for (std::size_t i = 0; i < k.buffers().size(); ++i) {
      const auto& b = k.buffers()[i];
      if (!b.output) continue;
      const std::size_t w = size_of(b.type);
      for (std::int64_t off = 0; off < b.count; off += k_compare_chunk) {
        const std::int64_t n = std::min(k_compare_chunk, b.count - off);
        out.resize(std::size_t(n) * w);
        m_backend->read(b.mem, std::uint64_t(off) * w, out.data(), out.size());
        compare_outputs(b.type, out.data(), answers[i].data() + std::size_t(off) * w, n,
                        std::uint64_t(off), atol, rtol, e, pattern);
      }
    }
    ++v.trials;
    if (e.wrong) break;  // one failing trial decides
  }
  v.max_abs_err = e.max_abs;
  v.max_rel_err = e.max_rel;
  v.unwritten = e.unwritten;
  v.status = e.wrong ? "failed" : "passed";
  if (e.unwritten) {
    v.note = std::to_string(e.unwritten) + " output elements were never written";
  } else if (e.wrong) {
    v.note = std::to_string(e.wrong) + " output elements differ from the reference beyond atol " +
             format_tolerance(atol) + " + rtol " + format_tolerance(rtol) +
             "·|ref| (first at element " + std::to_string(e.first_wrong) + ")";
  }
  return v;
}

point_result point_runner::measure(const job_plan& plan, std::uint64_t index, std::uint64_t seed) {
  const auto& spec = plan.spec();
  // A backend that runs no device code (the mock) makes simulated rows, failed ones included.
  const bool simulated = !m_backend->runs_device_code();
  auto failed = [&](const std::string& type, const std::string& message) {
    auto r = failed_point(index, plan.params(index), type, message);
    r.l2 = spec.timing.l2;
    r.simulated = simulated;
    r.environment.device = m_info.name;
    r.environment.driver = m_info.driver;
    return r;
  };
  if (!m_backend->usable())
    return failed("device_fault", "the device faulted earlier in this worker");
  // A kernel language this device cannot compile fails the point before anything is allocated.
  if (auto why = unsupported_language(spec, m_info)) return failed("unsupported", *why);
  kernel_instance instance;
  std::optional<kernel_instance> baseline_instance;
  try {
    instance = plan.resolve(index);
    baseline_instance = plan.resolve_baseline(index);
  } catch (const plan_error& e) {
    return failed("invalid_point", e.what());
  }

  const std::uint64_t point_seed = mix64(seed ^ mix64(index + 1));
  try {
    m_backend->begin_point({index, point_seed, &spec.mock});
    double need = footprint_bytes(instance);
    if (baseline_instance) need += footprint_bytes(*baseline_instance);
    check_memory(need, plan.describe_point(index));

    point_kernel candidate(*m_backend, instance);
    std::optional<point_kernel> baseline;
    if (baseline_instance) baseline.emplace(*m_backend, *baseline_instance);

    point_result r;
    r.index = index;
    r.params = plan.params(index);
    r.l2 = spec.timing.l2;
    r.simulated = simulated;
    r.verification = m_backend->runs_device_code()
                         ? verify(candidate, spec, point_seed)
                         : m_backend->simulate_verification(spec, instance);
    init_inputs(candidate, point_seed);
    if (baseline) init_inputs(*baseline, point_seed ^ k_baseline_salt);

    const buffer_set candidate_buffers = candidate.own_buffers();
    buffer_set baseline_buffers;
    std::vector<timed_kernel> kernels;
    kernels.push_back({[&] { candidate.launch(candidate_buffers); }, kernel_role::candidate});
    if (baseline) {
      baseline_buffers = baseline->own_buffers();
      kernels.push_back({[&] { baseline->launch(baseline_buffers); }, kernel_role::baseline});
    }
    const auto sampled = sample_interleaved(*m_backend, kernels, spec.timing);
    const auto& main = sampled[0];
    if (main.samples_us.empty()) {
      return failed("internal",
                    "every sample was discarded (the device throttled, or the host could not "
                    "queue the launches in time)");
    }
    std::optional<speedup_estimate> speedup;
    if (baseline && !sampled[1].samples_us.empty() &&
        sampled[1].samples_us.size() == main.samples_us.size()) {
      speedup = paired_speedup(main.samples_us, sampled[1].samples_us);
    }
    r.status = point_status::ok;
    r.time_us = main.summary;
    r.samples = main.samples_us.size();
    r.discarded = main.discarded;
    r.converged = main.converged;
    r.stop_reason = main.stop_reason;
    r.sampling_ms = main.elapsed_ms;
    r.batch = kernels[0].batch;
    r.environment.device = m_info.name;
    r.environment.driver = m_info.driver;
    r.environment.clock_mhz = m_info.clock_mhz;
    if (auto reading = m_backend->read_telemetry()) {
      if (reading->sm_clock_mhz) r.environment.clock_mhz = *reading->sm_clock_mhz;
      r.environment.temperature_c = reading->temperature_c;
      r.environment.power_w = reading->power_w;
    }
    analyse_point(r, instance, spec, m_analysis, speedup);
    if (main.throttled_kept > 0) {
      r.advice.push_back(std::to_string(main.throttled_kept) + " of the " +
                         std::to_string(r.samples) +
                         " samples kept ran while the device throttled (thermal or hardware "
                         "slowdown), too many to discard: the time is what the device gives "
                         "under this load");
    }
    return r;
  } catch (const compile_error& e) {
    return failed("compile_error", e.what());
  } catch (const backend_error& e) {
    return failed(point_error_type(e.kind()), e.what());
  } catch (const std::invalid_argument& e) {
    return failed("invalid_point", e.what());
  } catch (const std::bad_alloc&) {
    return failed("out_of_memory", "the host ran out of memory for this point");
  }
}

measured_roofline point_runner::measure_roofline() {
  measured_roofline r = run_roofline_benchmark(*m_backend);
  set_roofline(r);
  return r;
}

void point_runner::set_roofline(const measured_roofline& roofline) {
  m_info.measured = roofline;
  m_analysis.measured = roofline.peaks;
}

}  // namespace kernelscan

// The GPU engine (hip_engine.hpp). A point runs in four steps: its buffers are allocated (after
// checking free memory), its outputs are verified against the reference for `verify.trials`
// fresh seeded inputs, it is warmed up, and it is sampled with GPU events until the adaptive
// rule stops, interleaved A/B with the fitness baseline when the job has one.
//
// Each sample: in cold mode a flush of the caches (untimed); a kernel that holds the stream;
// the start event, the launches, the stop event; then the host releases the stream. So the
// launches run back to back whatever the host's launch rate, and the events time the GPU only.
// Kernels shorter than k_batch_below_us in hot mode are launched k times per sample and the
// time divided (the row's `batch`).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "engine/adaptive_sampler.hpp"
#include "engine/analysis.hpp"
#include "engine/device_catalog.hpp"
#include "engine/fitness.hpp"
#include "engine/hip/blas.hpp"
#include "engine/hip/gpu.hpp"
#include "engine/hip/hip_engine.hpp"
#include "engine/hip/kernels.hpp"
#include "engine/hip/log.hpp"
#include "engine/hip/rtc.hpp"
#include "engine/hip/telemetry.hpp"
#include "engine/job.hpp"
#include "engine/metrics.hpp"
#include "engine/output_check.hpp"

namespace kernelscan {
namespace {

using namespace gpu;
using clock_type = std::chrono::steady_clock;

constexpr double k_hold_timeout_ms = 2000;  // the blocking kernel gives up after this
constexpr double k_batch_below_us = 10;     // hot kernels shorter than this are batched ...
constexpr double k_batch_sample_us = 50;    // ... to about this much GPU time per sample
constexpr std::int64_t k_max_batch = 200;   // launches queued behind the blocking kernel
constexpr std::int64_t k_compare_chunk = std::int64_t(1) << 20;  // elements per host copy
constexpr double k_telemetry_every_ms = 10;
constexpr double k_memory_headroom = 0.95;  // share of free memory a point may take

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", bytes / double(1ull << 30));
  return text;
}

// --- devices --------------------------------------------------------------------------------

std::string version_text(int v) {
#if defined(KERNELSCAN_GPU_CUDA)
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
#else
  return std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100);
#endif
}

std::string pci_bus_id(int ordinal) {
  char id[64] = {};
  if (hipDeviceGetPCIBusId(id, int(sizeof id), ordinal) != hipSuccess) return "";
  return id;
}

device_info describe(int ordinal) {
  hipDeviceProp_t p{};
  check(hipGetDeviceProperties(&p, ordinal), "hipGetDeviceProperties");
  device_info d;
  d.index = ordinal;
  d.engine = engine_kind::hip;
  d.name = p.name;
#if defined(KERNELSCAN_GPU_CUDA)
  d.vendor = "NVIDIA";
  d.arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
#else
  d.vendor = "AMD";
  d.arch = p.gcnArchName;
  d.arch = d.arch.substr(0, d.arch.find(':'));  // "gfx942:sramecc+:xnack-"
#endif
  d.compute_units = p.multiProcessorCount;
  int khz = 0;
  if (hipDeviceGetAttribute(&khz, hipDeviceAttributeClockRate, ordinal) == hipSuccess) {
    d.clock_mhz = khz / 1000.0;
  }
  d.memory_bytes = p.totalGlobalMem;
  d.l2_bytes = std::uint64_t(p.l2CacheSize);
  int driver = 0, runtime = 0;
  (void)hipDriverGetVersion(&driver);
  (void)hipRuntimeGetVersion(&runtime);
  d.driver = std::string(KERNELSCAN_PLATFORM_NAME) + " driver " + version_text(driver) +
             ", runtime " + version_text(runtime);
  if (const device_model* m = match_device_model(d.name)) {
    d.model = std::string(m->key);
    d.datasheet = m->peaks;
    d.llc_bytes = m->llc_bytes;  // Infinity Cache: no runtime attribute reports it
  }
  return d;
}

// --- a kernel at one point, ready to run ---------------------------------------------------------

// A device buffer of a point: what it holds, and (outputs, when verifying) where the reference
// writes its answer.
struct point_buffer {
  std::string name;
  dtype type = dtype::f32;
  std::int64_t count = 0;
  arg_init init = arg_init::none;
  bool output = false;
  buffer mem;
  buffer ref;
};

using launcher = std::function<void(hipStream_t, const std::vector<void*>& ptrs)>;

struct point_kernel {
  std::vector<point_buffer> buffers;
  launcher run;
  std::optional<launcher> reference;  // writes the outputs of the pointers it is given
  dtype out_type = dtype::f32;        // tolerance and flags go by it
  std::vector<void*> ptrs() const {
    std::vector<void*> p;
    for (const auto& b : buffers)
      p.push_back(b.mem.get());
    return p;
  }
  std::vector<void*> ref_ptrs() const {
    std::vector<void*> p;
    for (const auto& b : buffers)
      p.push_back(b.output && b.ref.get() ? b.ref.get() : b.mem.get());
    return p;
  }
};

std::uint64_t bytes_of(dtype t, std::int64_t count) {
  return std::uint64_t(count) * size_of(t);
}

void add_buffer(point_kernel& k, std::string name, dtype t, std::int64_t count, arg_init init,
                bool output, bool verifying) {
  point_buffer b;
  b.name = std::move(name);
  b.type = t;
  b.count = count;
  b.init = init;
  b.output = output;
  b.mem = buffer(bytes_of(t, count));
  if (output && verifying) b.ref = buffer(bytes_of(t, count));
  k.buffers.push_back(std::move(b));
}

const point_buffer& bound(const point_kernel& k, const std::string& name, dtype t,
                          std::int64_t count, const char* role) {
  for (const auto& b : k.buffers) {
    if (b.name != name) continue;
    if (b.type != t || b.count < count) {
      throw std::invalid_argument(std::string("reference: argument \"") + name + "\" bound to " +
                                  role + " must be " + std::string(to_string(t)) + " with " +
                                  std::to_string(count) + " elements or more");
    }
    return b;
  }
  throw std::invalid_argument(std::string("reference: no buffer argument named \"") + name +
                              "\" to bind to " + role);
}

std::size_t index_of(const point_kernel& k, const point_buffer& b) {
  return std::size_t(&b - k.buffers.data());
}

gemm_args gemm_on(const gemm_instance& g, const void* a, const void* b, void* c) {
  gemm_args args;
  args.m = g.m;
  args.n = g.n;
  args.k = g.k;
  args.type = g.type;
  args.layout_a = g.layout_a;
  args.layout_b = g.layout_b;
  args.alpha = g.alpha;
  args.beta = g.beta;
  args.a = a;
  args.b = b;
  args.c = c;
  return args;
}

// Which of a, b, c a STREAM variant writes.
int stream_output(stream_variant v) {
  switch (v) {
    case stream_variant::copy:
    case stream_variant::add:
      return 2;
    case stream_variant::scale:
      return 1;
    case stream_variant::triad:
      return 0;
  }
  return 0;
}

// Kernel parameters of a user kernel: each argument's value stored as its type, and the array
// of pointers to them the launch API takes.
struct kernel_params {
  std::vector<std::uint64_t> storage;
  std::vector<void*> pointers;
};

kernel_params scalar_storage(const custom_instance& c) {
  kernel_params p;
  p.storage.resize(c.args.size());
  for (std::size_t i = 0; i < c.args.size(); ++i) {
    const auto& a = c.args[i];
    void* slot = &p.storage[i];
    if (a.pointer) continue;  // filled per launch
    with_type(a.type, [&](auto tag) {
      using T = decltype(tag);
      T v;
      if constexpr (std::is_same_v<T, gpu_f16> || std::is_same_v<T, gpu_bf16>) {
        v = from_float<T>(float(a.value));
      } else {
        v = T(a.value);
      }
      std::memcpy(slot, &v, sizeof v);
    });
  }
  return p;
}

// --- the engine -------------------------------------------------------------------------------

class hip_engine final : public engine {
 public:
  explicit hip_engine(int ordinal);
  ~hip_engine() override;

  const device_info& device() const override { return m_info; }
  point_result measure(const job_plan& plan, std::uint64_t index, std::uint64_t seed) override;
  measured_roofline measure_roofline() override;
  void set_roofline(const measured_roofline& roofline) override;
  bool needs_restart() const override { return m_broken; }

 private:
  // One kernel's samples of a measurement.
  struct sampled_kernel {
    point_kernel* kernel = nullptr;
    std::int64_t batch = 1;
    std::optional<adaptive_sampler> sampler;
  };

  point_kernel prepare(const kernel_instance& k, bool verifying);
  void init_inputs(point_kernel& k, std::uint64_t seed);
  verification_result verify(point_kernel& k, const job_spec& spec, std::uint64_t seed);
  double sample(const point_kernel& k, const std::vector<void*>& ptrs, std::int64_t batch,
                bool cold, bool& lost);
  std::int64_t choose_batch(const point_kernel& k, const std::vector<void*>& ptrs, l2_mode l2);
  std::vector<sampling_result> sample_interleaved(std::vector<sampled_kernel>& kernels,
                                                  const timing_options& timing);
  void check_memory(double need, const std::string& what);
  void sync(const char* what) { check(hipStreamSynchronize(m_stream.get()), what); }
  hipStream_t s() const { return m_stream.get(); }

  int m_ordinal;
  device_info m_info;
  analysis_context m_analysis;
  stream m_stream;
  event m_start, m_stop;
  mapped_flag m_flag;
  buffer m_flush;
  std::uint64_t m_flushes = 0;
  gemm_library m_blas;  // without a library in the build, its gemm() says so
  std::optional<module_cache> m_modules;
  std::unique_ptr<telemetry> m_telemetry;
  bool m_broken = false;
};

// Makes `ordinal` the thread's device before any member allocates on it.
int select_device(int ordinal) {
  check(hipSetDevice(ordinal), "hipSetDevice");
  return ordinal;
}

hip_engine::hip_engine(int ordinal) : m_ordinal(select_device(ordinal)), m_info(describe(ordinal)) {
  const device_model* model = match_device_model(m_info.name);
  if (m_info.datasheet) m_analysis.datasheet = *m_info.datasheet;
  m_analysis.launch_latency_us = model ? model->launch_latency_us : 5.0;
  m_analysis.cache_bytes = m_info.l2_bytes + m_info.llc_bytes;
  // Writing twice the caches' size evicts what a previous sample left in them.
  m_flush = buffer(std::max<std::uint64_t>(2 * (m_info.l2_bytes + m_info.llc_bytes), 64ull << 20));
  m_modules.emplace(m_info.arch);
  m_telemetry = telemetry::open(m_info.vendor, pci_bus_id(ordinal));
  log_info("GPU " + std::to_string(ordinal) + ": " + m_info.name + " (" + m_info.arch + ", " +
           std::to_string(m_info.compute_units) + " CUs, " + gib(double(m_info.memory_bytes)) +
           ", L2 " + std::to_string(m_info.l2_bytes >> 20) + " MiB); GEMM library: " +
           gemm_library::name() + "; telemetry: " + (m_telemetry ? "yes" : "none"));
}

hip_engine::~hip_engine() {
  if (!m_broken) (void)hipStreamSynchronize(m_stream.get());
}

void hip_engine::check_memory(double need, const std::string& what) {
  std::size_t free = 0, total = 0;
  check(hipMemGetInfo(&free, &total), "hipMemGetInfo");
  if (need > double(free) * k_memory_headroom) {
    throw gpu_error(hipErrorOutOfMemory, what + " needs " + gib(need) + " of device memory; " +
                                             gib(double(free)) + " of " + gib(double(total)) +
                                             " is free");
  }
}

point_kernel hip_engine::prepare(const kernel_instance& instance, bool verifying) {
  point_kernel k;
  if (const auto* g = std::get_if<gemm_instance>(&instance)) {
    k.out_type = g->type;
    add_buffer(k, "A", g->type, g->m * g->k, arg_init::random, false, false);
    add_buffer(k, "B", g->type, g->k * g->n, arg_init::random, false, false);
    add_buffer(k, "C", g->type, g->m * g->n, g->beta != 0 ? arg_init::random : arg_init::none, true,
               verifying);
    const gemm_instance gi = *g;
    if (g->impl == gemm_impl::library) {
      k.run = [this, gi](hipStream_t st, const std::vector<void*>& p) {
        m_blas.gemm(gemm_on(gi, p[0], p[1], p[2]), st);
      };
    } else {
      k.run = [gi](hipStream_t st, const std::vector<void*>& p) {
        gemm_builtin(gemm_on(gi, p[0], p[1], p[2]), st);
      };
    }
    k.reference = [gi](hipStream_t st, const std::vector<void*>& p) {
      gemm_reference(gemm_on(gi, p[0], p[1], p[2]), st);
    };
    return k;
  }
  if (const auto* st = std::get_if<stream_instance>(&instance)) {
    k.out_type = st->type;
    const int out = stream_output(st->variant);
    for (int i = 0; i < 3; ++i) {
      add_buffer(k, std::string(1, char('a' + i)), st->type, st->n,
                 i == out ? arg_init::none : arg_init::random, i == out, verifying && i == out);
    }
    const stream_instance si = *st;
    k.run = [si](hipStream_t str, const std::vector<void*>& p) {
      stream_op(si.variant, si.type, si.n, si.scalar, p[0], p[1], p[2], str);
    };
    k.reference = [si](hipStream_t str, const std::vector<void*>& p) {
      stream_reference(si.variant, si.type, si.n, si.scalar, p[0], p[1], p[2], str);
    };
    return k;
  }

  const auto& c = std::get<custom_instance>(instance);
  for (const auto& a : c.args) {
    if (!a.pointer) continue;
    add_buffer(k, a.name, a.type, a.count, a.init, a.output, verifying);
    if (a.output) k.out_type = a.type;
  }
  // Buffers in argument order, scalars in between: the launch maps one onto the other.
  auto launch_custom = [this, &c](const custom_launch& l) -> launcher {
    hipFunction_t fn = m_modules->function(*l.kernel);
    auto params = std::make_shared<kernel_params>(scalar_storage(c));
    return [fn, l, params, &c](hipStream_t st, const std::vector<void*>& p) {
      params->pointers.assign(c.args.size(), nullptr);
      std::size_t buffer = 0;
      for (std::size_t i = 0; i < c.args.size(); ++i) {
        if (c.args[i].pointer) std::memcpy(&params->storage[i], &p[buffer++], sizeof(void*));
        params->pointers[i] = &params->storage[i];
      }
      check(hipModuleLaunchKernel(fn, unsigned(l.grid[0]), unsigned(l.grid[1]), unsigned(l.grid[2]),
                                  unsigned(l.block[0]), unsigned(l.block[1]), unsigned(l.block[2]),
                                  unsigned(l.shared_bytes), st, params->pointers.data(), nullptr),
            "launching the kernel");
    };
  };
  k.run = launch_custom(c.launch);
  if (!c.reference) return k;
  if (const auto* rg = std::get_if<gemm_instance>(&*c.reference)) {
    const gemm_instance gi = *rg;
    const auto ia = index_of(k, bound(k, gi.bind_a, gi.type, gi.m * gi.k, "A"));
    const auto ib = index_of(k, bound(k, gi.bind_b, gi.type, gi.k * gi.n, "B"));
    const auto ic = index_of(k, bound(k, gi.bind_c, gi.type, gi.m * gi.n, "C"));
    k.reference = [this, gi, ia, ib, ic](hipStream_t st, const std::vector<void*>& p) {
      const gemm_args args = gemm_on(gi, p[ia], p[ib], p[ic]);
      if (gi.impl == gemm_impl::library && gemm_library::available()) {
        m_blas.gemm(args, st);
      } else {
        gemm_reference(args, st);
      }
    };
  } else if (const auto* rs = std::get_if<stream_instance>(&*c.reference)) {
    const stream_instance si = *rs;
    // copy reads no b and scale no a: their names are empty and their pointers null.
    auto slot = [&](const std::string& name, const char* role) -> std::optional<std::size_t> {
      if (name.empty()) return std::nullopt;
      return index_of(k, bound(k, name, si.type, si.n, role));
    };
    const auto ia = slot(si.bind_a, "a"), ib = slot(si.bind_b, "b"), ic = slot(si.bind_c, "c");
    k.reference = [si, ia, ib, ic](hipStream_t st, const std::vector<void*>& p) {
      auto at = [&p](const std::optional<std::size_t>& i) { return i ? p[*i] : nullptr; };
      stream_reference(si.variant, si.type, si.n, si.scalar, at(ia), at(ib), at(ic), st);
    };
  } else {
    k.reference = launch_custom(std::get<custom_launch>(*c.reference));
  }
  return k;
}

void hip_engine::init_inputs(point_kernel& k, std::uint64_t seed) {
  for (std::size_t i = 0; i < k.buffers.size(); ++i) {
    auto& b = k.buffers[i];
    void* p = b.mem.get();
    switch (b.init) {
      case arg_init::none:
        if (b.output) {
          fill_unwritten(p, b.type, b.count, s());
        } else {
          fill_random(p, b.type, b.count, mix(seed ^ mix(i + 1)), s());
        }
        break;
      case arg_init::random:
        fill_random(p, b.type, b.count, mix(seed ^ mix(i + 1)), s());
        break;
      case arg_init::zeros:
        fill_value(p, b.type, b.count, 0.0, s());
        break;
      case arg_init::ones:
        fill_value(p, b.type, b.count, 1.0, s());
        break;
      case arg_init::arange:
        fill_arange(p, b.type, b.count, s());
        break;
    }
    // The reference starts from the same state as the kernel's output.
    if (b.ref.get()) {
      check(hipMemcpyAsync(b.ref.get(), p, b.mem.bytes(), hipMemcpyDeviceToDevice, s()),
            "copying the initial output");
    }
  }
}

verification_result hip_engine::verify(point_kernel& k, const job_spec& spec, std::uint64_t seed) {
  verification_result v;
  if (spec.verify.trials == 0) {
    v.note = "verify.trials is 0";
    return v;
  }
  if (!k.reference) {
    v.note = "the kernel has no reference to compare with";
    return v;
  }
  const double tol = default_tolerance(k.out_type);
  const double atol = spec.verify.atol.value_or(tol);
  const double rtol = spec.verify.rtol.value_or(tol);
  v.tolerance = rtol;
  output_errors e;
  std::vector<unsigned char> out, ref;
  for (int trial = 0; trial < spec.verify.trials; ++trial) {
    init_inputs(k, mix(seed ^ mix(0x7e57ull + std::uint64_t(trial))));
    (*k.reference)(s(), k.ref_ptrs());
    k.run(s(), k.ptrs());
    sync("running the kernel and its reference");
    for (const auto& b : k.buffers) {
      if (!b.output || !b.ref.get()) continue;
      const std::size_t w = size_of(b.type);
      for (std::int64_t off = 0; off < b.count; off += k_compare_chunk) {
        const std::int64_t n = std::min(k_compare_chunk, b.count - off);
        out.resize(std::size_t(n) * w);
        ref.resize(std::size_t(n) * w);
        const auto* mem = static_cast<const unsigned char*>(b.mem.get()) + std::size_t(off) * w;
        const auto* rmem = static_cast<const unsigned char*>(b.ref.get()) + std::size_t(off) * w;
        check(hipMemcpy(out.data(), mem, out.size(), hipMemcpyDeviceToHost), "reading outputs");
        check(hipMemcpy(ref.data(), rmem, ref.size(), hipMemcpyDeviceToHost), "reading outputs");
        compare_outputs(b.type, out.data(), ref.data(), n, std::uint64_t(off), atol, rtol, e);
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
             std::to_string(atol) + " + rtol " + std::to_string(rtol) + "·|ref| (first at " +
             std::to_string(e.first_wrong) + ")";
  }
  return v;
}

double hip_engine::sample(const point_kernel& k, const std::vector<void*>& ptrs, std::int64_t batch,
                          bool cold, bool& lost) {
  if (cold) {
    check(hipMemsetAsync(m_flush.get(), int(++m_flushes & 0xff), m_flush.bytes(), s()),
          "flushing the caches");
  }
  volatile int* flag = m_flag.host();
  flag[0] = 0;
  flag[1] = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // The stream must be released whatever happens below, or the next sync waits for the timeout.
  struct release {
    volatile int* flag;
    ~release() {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      flag[0] = 1;
    }
  };
  {
    hold_stream(m_flag.device(), k_hold_timeout_ms, s());
    release guard{flag};
    check(hipEventRecord(m_start.get(), s()), "hipEventRecord");
    for (std::int64_t i = 0; i < batch; ++i)
      k.run(s(), ptrs);
    check(hipEventRecord(m_stop.get(), s()), "hipEventRecord");
  }
  check(hipEventSynchronize(m_stop.get()), "waiting for the kernel");
  float ms = 0;
  check(hipEventElapsedTime(&ms, m_start.get(), m_stop.get()), "hipEventElapsedTime");
  // The host was too slow to queue the launches before the hold ran out: the launches may have
  // waited on it, so the sample is not the kernel's time.
  lost = flag[1] != 0;
  return double(ms) * 1000.0 / double(batch);
}

std::int64_t hip_engine::choose_batch(const point_kernel& k, const std::vector<void*>& ptrs,
                                      l2_mode l2) {
  if (l2 == l2_mode::cold) return 1;  // each launch needs its own flush
  double t[3];
  bool lost = false;
  for (double& x : t)
    x = sample(k, ptrs, 1, false, lost);
  std::sort(std::begin(t), std::end(t));
  if (t[1] >= k_batch_below_us || t[1] <= 0) return 1;
  return std::clamp<std::int64_t>(std::int64_t(std::ceil(k_batch_sample_us / t[1])), 1,
                                  k_max_batch);
}

std::vector<sampling_result> hip_engine::sample_interleaved(std::vector<sampled_kernel>& kernels,
                                                            const timing_options& timing) {
  const bool cold = timing.l2 == l2_mode::cold;
  std::vector<std::vector<void*>> ptrs;
  for (auto& k : kernels) {
    ptrs.push_back(k.kernel->ptrs());
    for (int i = 0; i < timing.warmup; ++i)
      k.kernel->run(s(), ptrs.back());
  }
  sync("warming up");
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    kernels[i].batch = choose_batch(*kernels[i].kernel, ptrs[i], timing.l2);
    kernels[i].sampler.emplace(timing);
  }
  const auto started = clock_type::now();
  auto last_reading = started;
  bool throttled = false;
  for (;;) {
    if (m_telemetry) {
      const auto now = clock_type::now();
      if (std::chrono::duration<double, std::milli>(now - last_reading).count() >=
          k_telemetry_every_ms) {
        throttled = m_telemetry->read().throttled();
        last_reading = now;
      }
    }
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      bool lost = false;
      const double t = sample(*kernels[i].kernel, ptrs[i], kernels[i].batch, cold, lost);
      kernels[i].sampler->add(t, throttled || lost);
    }
    const double elapsed =
        std::chrono::duration<double, std::milli>(clock_type::now() - started).count();
    bool done = true;
    for (auto& k : kernels)
      done = k.sampler->should_stop(elapsed) && done;
    if (done) break;
  }
  std::vector<sampling_result> out;
  for (auto& k : kernels)
    out.push_back(k.sampler->finish());
  return out;
}

point_result hip_engine::measure(const job_plan& plan, std::uint64_t index, std::uint64_t seed) {
  const auto& spec = plan.spec();
  auto failed = [&](const std::string& type, const std::string& message) {
    auto r = failed_point(index, plan.params(index), type, message);
    r.l2 = spec.timing.l2;
    r.environment.device = m_info.name;
    r.environment.driver = m_info.driver;
    return r;
  };
  if (m_broken) return failed("device_fault", "the device faulted earlier in this worker");
  m_modules->trim();
  kernel_instance instance;
  std::optional<kernel_instance> baseline_instance;
  try {
    instance = plan.resolve(index);
    baseline_instance = plan.resolve_baseline(index);
  } catch (const plan_error& e) {
    return failed("invalid_point", e.what());
  }

  try {
    const bool verifying = spec.verify.trials > 0;
    double need = footprint_bytes(instance);
    if (baseline_instance) need += footprint_bytes(*baseline_instance);
    check_memory(need, plan.describe_point(index));

    point_kernel candidate = prepare(instance, verifying);
    std::optional<point_kernel> baseline;
    if (baseline_instance) baseline = prepare(*baseline_instance, false);

    point_result r;
    r.index = index;
    r.params = plan.params(index);
    r.l2 = spec.timing.l2;
    r.verification = verify(candidate, spec, mix(seed ^ mix(index + 1)));
    init_inputs(candidate, mix(seed ^ mix(index + 1)));
    if (baseline) init_inputs(*baseline, mix(seed ^ mix(index + 1) ^ 0xba5eull));
    sync("initialising inputs");

    std::vector<sampled_kernel> kernels(baseline ? 2 : 1);
    kernels[0].kernel = &candidate;
    if (baseline) kernels[1].kernel = &*baseline;
    const auto sampled = sample_interleaved(kernels, spec.timing);
    const auto& main = sampled[0];
    std::optional<speedup_estimate> speedup;
    if (baseline && !main.samples_us.empty() && !sampled[1].samples_us.empty()) {
      speedup = paired_speedup(main.samples_us, sampled[1].samples_us);
    }
    if (main.samples_us.empty()) {
      return failed("internal",
                    "every sample was discarded (the device throttled, or the host "
                    "could not queue the launches in time)");
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
    if (m_telemetry) {
      const auto reading = m_telemetry->read();
      if (reading.sm_clock_mhz) r.environment.clock_mhz = *reading.sm_clock_mhz;
      r.environment.temperature_c = reading.temperature_c;
      r.environment.power_w = reading.power_w;
    }
    analyse_point(r, instance, spec, m_analysis, speedup);
    return r;
  } catch (const compile_error& e) {
    return failed("compile_error", e.what());
  } catch (const gpu_error& e) {
    if (e.sticky()) {
      m_broken = true;
      log_error("GPU " + std::to_string(m_ordinal) + ": " + e.what() +
                "; the worker will be replaced");
      return failed("device_fault", e.what());
    }
    if (e.out_of_memory()) return failed("out_of_memory", e.what());
    if (e.code() == hipErrorInvalidConfiguration || e.code() == hipErrorInvalidValue) {
      return failed("invalid_point", e.what());
    }
    return failed("internal", e.what());
  } catch (const std::invalid_argument& e) {
    return failed("invalid_point", e.what());
  }
}

measured_roofline hip_engine::measure_roofline() {
  // Each benchmark sampled as a point is, cold, with a shorter time budget.
  job_spec spec;
  spec.verify.trials = 0;
  spec.timing.max_time_ms = 1000;
  auto median_us = [&](const kernel_instance& k) {
    point_kernel pk = prepare(k, false);
    init_inputs(pk, 1);
    std::vector<sampled_kernel> kernels(1);
    kernels[0].kernel = &pk;
    const auto sampled = sample_interleaved(kernels, spec.timing);
    if (sampled[0].samples_us.empty()) throw std::runtime_error("every sample was discarded");
    return sampled[0].summary.median;
  };

  measured_roofline r;
  stream_instance triad;
  triad.n = std::int64_t(1) << 28;
  check_memory(footprint_bytes(triad), "the stream triad");
  r.peaks.bandwidth_gbps = workload_bytes(triad) / (median_us(triad) * 1e3);

  const gemm_impl impl = gemm_library::available() ? gemm_impl::library : gemm_impl::builtin;
  auto gemm_tflops = [&](dtype t) {
    gemm_instance g;
    g.m = g.n = g.k = 8192;
    g.type = t;
    g.impl = impl;
    return workload_flops(g) / (median_us(g) * 1e6);
  };
  r.peaks.f64_tflops = gemm_tflops(dtype::f64);
  r.peaks.f32_tflops = gemm_tflops(dtype::f32);
  r.peaks.f16_tflops = gemm_tflops(dtype::f16);
  r.peaks.bf16_tflops = gemm_tflops(dtype::bf16);
  // No i8 GEMM is measured: its ceiling is the datasheet's scaled by the f16 share reached.
  if (m_info.datasheet && m_info.datasheet->f16_tflops > 0) {
    r.peaks.i8_tops = m_info.datasheet->i8_tops * r.peaks.f16_tflops / m_info.datasheet->f16_tflops;
  }

  // FMA: 4 waves of 2048 threads per compute unit, 16 FLOP per iteration each.
  const std::int64_t threads = std::int64_t(m_info.compute_units) * 2048 * 4;
  constexpr int iterations = 4096;
  buffer out(std::uint64_t(threads) * sizeof(float));
  point_kernel fma;
  fma.run = [&out, threads](hipStream_t st, const std::vector<void*>&) {
    fma_peak(static_cast<float*>(out.get()), threads, iterations, st);
  };
  std::vector<sampled_kernel> kernels(1);
  kernels[0].kernel = &fma;
  timing_options hot = spec.timing;
  hot.l2 = l2_mode::hot;
  const auto sampled = sample_interleaved(kernels, hot);
  r.peaks.vector_f32_tflops = double(threads) * iterations * 16 / (sampled[0].summary.median * 1e6);

  r.measured_ms = unix_time_ms();
  r.method = "stream triad 2^28 f32 (cold), " +
             std::string(gemm_library::available() ? gemm_library::name() : "builtin") +
             " gemm 8192^3 per dtype, fma; i8 scaled from the f16 share";
  set_roofline(r);
  return r;
}

void hip_engine::set_roofline(const measured_roofline& roofline) {
  m_info.measured = roofline;
  m_analysis.measured = roofline.peaks;
}

}  // namespace

std::vector<device_info> discover_gpus() {
  std::vector<device_info> out;
  int count = 0;
  const hipError_t e = hipGetDeviceCount(&count);
  if (e != hipSuccess) {
    log_info(std::string("no GPU: ") + hipGetErrorName(e) + " (" + hipGetErrorString(e) + ")");
    return out;
  }
  for (int i = 0; i < count; ++i) {
    try {
      out.push_back(describe(i));
    } catch (const std::exception& ex) {
      log_warn("GPU " + std::to_string(i) + " cannot be described: " + ex.what());
    }
  }
  return out;
}

std::unique_ptr<engine> make_hip_engine(int ordinal) {
  return std::make_unique<hip_engine>(ordinal);
}

std::string gpu_platform() {
  int runtime = 0;
  (void)hipRuntimeGetVersion(&runtime);
  return std::string(KERNELSCAN_PLATFORM_NAME) + " " + version_text(runtime);
}

}  // namespace kernelscan

// The HIP backend (hip_engine.hpp): the platform calls of the device_backend interface on HIP,
// or on CUDA through runtime.hpp. Everything that judges a kernel is the point runner's.
//
// A timed sample: a one-thread kernel holds the stream while the host queues the start event,
// the launches and the stop event, then the host releases it; so the launches run back to back
// whatever the host's launch rate, and the events time the GPU only (nvbench's blocking kernel).

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "engine/buffer_pool.hpp"
#include "engine/cache_flush.hpp"
#include "engine/device_catalog.hpp"
#include "engine/hip/blas.hpp"
#include "engine/hip/gpu.hpp"
#include "engine/hip/hip_engine.hpp"
#include "engine/hip/kernels.hpp"
#include "engine/hip/log.hpp"
#include "engine/hip/rtc.hpp"
#include "engine/hip/telemetry.hpp"
#include "engine/occupancy.hpp"
#include "engine/point_kernel.hpp"
#include "engine/point_runner.hpp"
#include "engine/text_list.hpp"

namespace kernelscan {
namespace {

using namespace gpu;

constexpr double k_hold_timeout_ms = 2000;  // the blocking kernel gives up after this

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
  d.type = "gpu";
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
  device_limits& l = d.limits;
  l.block_threads = p.maxThreadsPerBlock;
  int block_shared = 0;
  check(hipDeviceGetAttribute(&block_shared, hipDeviceAttributeMaxSharedMemoryPerBlock, ordinal),
        "hipDeviceGetAttribute(max shared memory per block)");
  l.block_shared_bytes = std::uint64_t(block_shared);
  l.warp_size = p.warpSize;
  l.unit_threads = p.maxThreadsPerMultiProcessor;
#if defined(KERNELSCAN_GPU_CUDA)
  l.unit_registers = p.regsPerMultiprocessor;
  l.unit_shared_bytes = p.sharedMemPerMultiprocessor;
#else
  // HIP 5's properties do not give a CU's registers.
  l.unit_shared_bytes = p.maxSharedMemoryPerMultiProcessor;
#endif
  d.pci_bus_id = pci_bus_id(ordinal);
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
  d.llc_bytes = last_level_cache_bytes(d);  // by architecture where the catalog does not know
  if (gpu::gemm_library::available()) {
    d.capabilities.gemm_library = gpu::gemm_library::name();
  } else {
    d.capabilities.gemm_library_types.clear();
  }
  return d;
}

// What one SM (CU) of the device holds, for naming the limit on a kernel's occupancy: its limits
// (describe()) and, on CUDA, what its properties add. Without a CU's registers (HIP 5 does not
// give them) that limit is not modelled.
unit_limits unit_limits_of(const device_info& d, int ordinal) {
  unit_limits u;
  u.warp_size = d.limits.warp_size;
  u.max_threads = d.limits.unit_threads;
  u.registers = d.limits.unit_registers;
  u.shared_bytes = d.limits.unit_shared_bytes;
#if defined(KERNELSCAN_GPU_CUDA)
  int blocks = 0, reserved = 0;
  if (cudaDeviceGetAttribute(&blocks, cudaDevAttrMaxBlocksPerMultiprocessor, ordinal) ==
          cudaSuccess &&
      cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, ordinal) ==
          cudaSuccess) {
    u.max_blocks = blocks;
    u.register_granule = 256;  // per warp, on every architecture since Maxwell
    u.shared_reserved = std::uint64_t(reserved);
  }
#else
  (void)ordinal;
#endif
  return u;
}

void* ptr(const device_buffer* b) {
  return b ? reinterpret_cast<void*>(b->handle()) : nullptr;
}

gemm_args gemm_on(const gemm_call& c) {
  const gemm_instance& g = *c.gemm;
  gemm_args args;
  args.m = g.m;
  args.n = g.n;
  args.k = g.k;
  args.type = g.type;
  args.layout_a = g.layout_a;
  args.layout_b = g.layout_b;
  args.alpha = g.alpha;
  args.beta = g.beta;
  args.a = ptr(c.a);
  args.b = ptr(c.b);
  args.c = ptr(c.c);
  return args;
}

bool floating_gemm(dtype t) {
  return t == dtype::f64 || t == dtype::f32 || t == dtype::f16 || t == dtype::bf16;
}

class hip_backend final : public device_backend {
 public:
  explicit hip_backend(int ordinal);
  ~hip_backend() override;

  const device_info& device() const override { return m_info; }
  double launch_latency_us() const override {
    const device_model* model = match_device_model(m_info.name);
    return model ? model->launch_latency_us : 5.0;
  }
  std::string gemm_library() const override {
    return gpu::gemm_library::available() ? gpu::gemm_library::name() : "";
  }
  bool supports_gemm(gemm_algorithm algorithm, dtype t) const override {
    switch (algorithm) {
      case gemm_algorithm::library:
        return gpu::gemm_library::available() && floating_gemm(t);
      case gemm_algorithm::builtin:
        return floating_gemm(t);
      case gemm_algorithm::reference:
        return true;
    }
    return false;
  }

  void begin_point(const point_context&) override {
    // A failed call of an earlier point must not be reported by this one's first launch.
    (void)hipGetLastError();
    m_functions.clear();
    m_modules->release_fresh();
    m_modules->trim();
    m_pool.begin_point();
  }
  bool usable() const override { return !g_context_lost; }

  // What the pool keeps counts as free: it is given back when an allocation needs the room.
  std::uint64_t free_memory() override {
    std::size_t free = 0, total = 0;
    check(hipMemGetInfo(&free, &total), "hipMemGetInfo");
    return free + m_pool.bytes();
  }
  std::uint64_t max_allocation() const override { return m_info.memory_bytes; }
  // One hipMalloc of guard + bytes + guard (one the pool kept, where it has one of this size;
  // the pool gives back what it keeps when hipMalloc finds no room); the buffer's pointer is the
  // first data byte (4096 past an allocation's 256-byte alignment keeps every alignment a
  // kernel may assume).
  // Where buffers lie, and whether they are new, can change how fast a kernel reads them: at
  // debug level each one is logged, to tell such effects from the kernel's own.
  static void log_buffer(std::uint64_t bytes, std::uintptr_t data, const char* how) {
    if (!debug_enabled()) return;
    char line[128];
    std::snprintf(line, sizeof line, "buffer of %llu bytes at %#llx, %s",
                  static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(data),
                  how);
    log_debug(line);
  }
  device_buffer allocate_guarded(std::uint64_t bytes, std::uint64_t guard) override {
    if (bytes == 0) return device_buffer(this, 0, 0);
    if (const auto a = m_pool.take(bytes, guard)) {
      log_buffer(bytes, a->handle, "kept from an earlier point");
      return device_buffer(this, a->handle, a->bytes, a->guard, a->base);
    }
    void* p = nullptr;
    hipError_t status = hipMalloc(&p, guard + bytes + guard);
    if (status == hipErrorOutOfMemory && !m_pool.empty()) {
      (void)hipGetLastError();
      m_pool.clear();
      status = hipMalloc(&p, guard + bytes + guard);
    }
    check(status, "hipMalloc");
    const auto base = reinterpret_cast<std::uintptr_t>(p);
    log_buffer(bytes, base + guard, "new");
    return device_buffer(this, base + guard, bytes, guard, base);
  }
  void fill(const device_buffer& b, const fill_request& f) override {
    void* p = ptr(&b);
    switch (f.kind) {
      case fill_kind::random:
        return fill_random(p, f.type, f.count, f.seed, s());
      case fill_kind::value:
        return fill_value(p, f.type, f.count, f.value, s());
      case fill_kind::arange:
        return fill_arange(p, f.type, f.count, s());
      case fill_kind::unwritten:
        return fill_unwritten(p, f.type, f.count, f.pattern, s());
    }
  }
  // Fills of one kind, type and length (group_fills) k_fill_sets to a launch: a batched hot
  // sample refreshes a set of buffers per launch of its batch, each buffer a launch of its own
  // otherwise (microseconds each, more than a kilobyte buffer takes to fill).
  void fill_all(std::span<const fill_target> fills) override {
    const grouped_fills grouped = group_fills(fills, k_fill_sets);
    for (const fill_target* t : grouped.single)
      fill(*t->buffer, t->request);
    for (const fill_group& g : grouped.groups) {
      fill_sets sets{};
      for (std::size_t j = 0; j < g.members.size(); ++j) {
        sets.p[j] = ptr(g.members[j]->buffer);
        sets.seed[j] = g.members[j]->request.seed;
      }
      const int n = int(g.members.size());
      if (g.random) {
        fill_random_sets(sets, n, g.type, g.count, s());
      } else {
        fill_words_sets(sets, n, g.count, g.word, s());
      }
    }
  }
  void write(const device_buffer& b, std::uint64_t offset, const void* src,
             std::uint64_t bytes) override {
    synchronize();
    check(hipMemcpy(static_cast<char*>(ptr(&b)) + offset, src, bytes, hipMemcpyHostToDevice),
          "copying to the device");
  }
  void read(const device_buffer& b, std::uint64_t offset, void* dst, std::uint64_t bytes) override {
    synchronize();
    check(hipMemcpy(dst, static_cast<const char*>(ptr(&b)) + offset, bytes, hipMemcpyDeviceToHost),
          "reading from the device");
  }
  std::uint64_t hash(const device_buffer& b, std::uint64_t bytes) override {
    const hash_ref one{&b, bytes};
    return hash_all({&one, 1}).front();
  }
  // The words on the device: reading the buffers back over the bus would cost far more. Each
  // hash's threads write their partials to one scratch buffer in turn (the stream orders them),
  // folded into k_hash_partials words of its own; the folded words of every buffer come back in
  // one copy.
  std::vector<std::uint64_t> hash_all(std::span<const hash_ref> refs) override {
    return hash_by_words(refs, [&](std::span<const word_job> jobs) {
      if (!m_hash_partials.get()) {
        m_hash_partials = buffer(k_word_hash_threads * sizeof(std::uint64_t));
      }
      const std::size_t folded_words = jobs.size() * std::size_t(k_hash_partials);
      if (m_hash_folded_words < folded_words) {
        m_hash_folded = buffer(folded_words * sizeof(std::uint64_t));
        m_hash_folded_words = folded_words;
      }
      auto* partials = static_cast<std::uint64_t*>(m_hash_partials.get());
      auto* folded = static_cast<std::uint64_t*>(m_hash_folded.get());
      for (std::size_t j = 0; j < jobs.size(); ++j) {
        hash_words(ptr(jobs[j].buffer), jobs[j].words, partials, jobs[j].threads,
                   folded + j * std::size_t(k_hash_partials), s());
      }
      std::vector<std::uint64_t> all(folded_words);
      synchronize();
      check(
          hipMemcpy(all.data(), folded, all.size() * sizeof(std::uint64_t), hipMemcpyDeviceToHost),
          "reading the hashes");
      std::vector<std::vector<std::uint64_t>> out;
      out.reserve(jobs.size());
      for (std::size_t j = 0; j < jobs.size(); ++j) {
        const auto from = all.begin() + std::ptrdiff_t(j * std::size_t(k_hash_partials));
        out.emplace_back(from, from + k_hash_partials);
      }
      return out;
    });
  }
  // On the device: a block's partial results come back, not the outputs.
  std::optional<output_screen> screen_outputs(const device_buffer& out, const device_buffer& ref,
                                              dtype t, std::int64_t n, double atol,
                                              double rtol) override {
    output_screen found;
    if (n <= 0) return found;
    const auto blocks = unsigned(std::clamp<std::int64_t>((n + 255) / 256, 1, k_screen_blocks));
    if (!m_screen_partials.get()) {
      m_screen_partials = buffer(std::size_t(k_screen_blocks) * 3 * sizeof(double));
    }
    auto* irregular = static_cast<std::uint64_t*>(m_screen_partials.get());
    auto* sums = reinterpret_cast<double*>(irregular + k_screen_blocks);
    gpu::screen_outputs(ptr(&out), ptr(&ref), t, n, atol, rtol, irregular, sums, blocks, s());
    // Both parts in one copy (6 KiB): a wait for the device costs more than the bytes.
    std::vector<std::uint64_t> parts(std::size_t(k_screen_blocks) * 3);
    synchronize();
    check(hipMemcpy(parts.data(), irregular, parts.size() * sizeof(std::uint64_t),
                    hipMemcpyDeviceToHost),
          "reading the screen of the outputs");
    for (unsigned b = 0; b < blocks; ++b) {
      found.irregular += parts[b];
      found.sum_sq_diff += std::bit_cast<double>(parts[k_screen_blocks + 2 * b]);
      found.sum_sq_ref += std::bit_cast<double>(parts[k_screen_blocks + 2 * b + 1]);
    }
    return found;
  }
  void xor_keystream(const device_buffer& b, std::uint64_t words, const device_buffer& pad,
                     std::uint64_t pad_words, const device_buffer& periods) override {
    gpu::xor_keystream(ptr(&b), std::int64_t(words), ptr(&pad), std::int64_t(pad_words),
                       ptr(&periods), s());
  }
  void copy(const device_buffer& dst, const device_buffer& src, std::uint64_t bytes) override {
    check(hipMemcpyAsync(ptr(&dst), ptr(&src), bytes, hipMemcpyDeviceToDevice, s()),
          "copying on the device");
  }
  void write_guard(const device_buffer& b, guard_side side, const void* src) override {
    if (!b.guard()) return;
    synchronize();
    check(hipMemcpy(guard_ptr(b, side), src, b.guard(), hipMemcpyHostToDevice),
          "copying to the device");
  }
  void read_guard(const device_buffer& b, guard_side side, void* dst) override {
    if (!b.guard()) return;
    synchronize();
    check(hipMemcpy(dst, guard_ptr(b, side), b.guard(), hipMemcpyDeviceToHost),
          "reading from the device");
  }

  // Copies queued on the stream from and to page-locked memory: no wait for each (a pageable
  // hipMemcpy of a 64 KiB guard waits for the device and stages the bytes through the driver).
  // The canary stays in that memory until the next batch, which waits for the stream first.
  void write_guards(std::span<const guard_ref> guards, const void* canary) override {
    std::uint64_t bytes = 0;
    for (const auto& g : guards)
      bytes = std::max(bytes, g.buffer->guard());
    if (!bytes) return;
    synchronize();  // no copy queued earlier still reads the staging memory
    stage(bytes);
    std::memcpy(m_guard_staging.data(), canary, bytes);
    for (const auto& g : guards) {
      if (!g.buffer->guard()) continue;
      check(hipMemcpyAsync(guard_ptr(*g.buffer, g.side), m_guard_staging.data(), g.buffer->guard(),
                           hipMemcpyHostToDevice, s()),
            "copying to the device");
    }
  }
  std::vector<bool> guards_hold(std::span<const guard_ref> guards, const void* canary) override {
    synchronize();
    stage(guard_bytes(guards));
    std::uint64_t at = 0;
    for (const auto& g : guards) {
      if (!g.buffer->guard()) continue;
      check(hipMemcpyAsync(m_guard_staging.data() + at, guard_ptr(*g.buffer, g.side),
                           g.buffer->guard(), hipMemcpyDeviceToHost, s()),
            "reading from the device");
      at += g.buffer->guard();
    }
    synchronize();
    return guards_match(guards, m_guard_staging.data(), canary);
  }

  kernel_id compile(const custom_kernel& kernel) override {
    return add_function([&] { return m_modules->function(kernel); });
  }
  kernel_id compile_fresh(const custom_kernel& kernel) override {
    return add_function([&] { return m_modules->fresh_function(kernel); });
  }
  // Numbers the function `get` compiles or loads; its errors as the backend reports them.
  template <typename Get>
  kernel_id add_function(const Get& get) {
    hipFunction_t fn{};
    try {
      fn = get();
    } catch (const backend_error&) {
      throw;
    } catch (const compile_error&) {
      throw;
    } catch (const unsupported_language_error& e) {
      throw backend_error(fault_kind::unsupported, e.what());
    } catch (const std::runtime_error& e) {
      throw backend_error(fault_kind::internal, e.what());
    }
    m_functions.push_back(fn);
    return m_functions.size() - 1;
  }
  void launch(const kernel_call& call) override;
  std::optional<kernel_resources> resources(kernel_id function,
                                            const custom_launch& launch) override;
  void gemm(const gemm_call& call) override;
  void stream(const stream_call& call) override {
    const auto& st = *call.stream;
    if (call.reference) {
      stream_reference(st.variant, st.type, st.n, st.scalar, ptr(call.a), ptr(call.b), ptr(call.c),
                       s());
    } else {
      stream_op(st.variant, st.type, st.n, st.scalar, ptr(call.a), ptr(call.b), ptr(call.c), s());
    }
  }
  void fma(const device_buffer& out, std::int64_t threads, int iterations) override {
    fma_peak(static_cast<float*>(ptr(&out)), threads, iterations, s());
  }
  void synchronize() override { check(hipStreamSynchronize(s()), "waiting for the device"); }

  void flush_caches() override {
    flush_by_reading(m_flush.get(), m_flush.bytes(), m_sink.get(), s());
  }
  void scrub_local_memory() override {
    ++m_scrubs;
    scrub_shared_memory(m_scrub, 0xa5a5a5a5u ^ m_scrubs, m_sink.get(),
                        static_cast<unsigned int*>(m_scrub_arrivals.get()),
                        unsigned(m_scrubs * std::uint64_t(m_scrub.blocks)), s());
  }
  timed_sample time_launches(kernel_role role, const std::function<void()>& enqueue) override;
  void mark_launch() override;
  std::optional<telemetry_reading> read_telemetry() override {
    if (!m_telemetry) return std::nullopt;
    return m_telemetry->read();
  }

 private:
  // Into the pool, for the next allocation of the same size (hipFree would also wait for the
  // device); freed where the context is lost.
  void release(const device_buffer& b) noexcept override {
    if (!b.base()) return;
    const buffer_pool::allocation a{b.handle(), b.base(), b.bytes(), b.guard(),
                                    2 * b.guard() + b.bytes()};
    if (g_context_lost) return free_allocation(a);
    m_pool.keep(a);
  }
  static void free_allocation(const buffer_pool::allocation& a) noexcept {
    (void)hipFree(reinterpret_cast<void*>(a.base));
  }
  static void* guard_ptr(const device_buffer& b, guard_side side) {
    return reinterpret_cast<void*>(side == guard_side::before ? b.base() : b.handle() + b.bytes());
  }
  hipStream_t s() const { return m_stream.get(); }
  // The shared memory a block may ask for, its static shared memory included (bytes).
  std::int64_t max_shared() const { return std::int64_t(m_info.limits.block_shared_bytes); }
  void explain_refused_block(const kernel_call& call);
  // At least `bytes` of page-locked staging memory (the stream waited for).
  void stage(std::uint64_t bytes) {
    if (m_guard_staging.bytes() < bytes) {
      m_guard_staging = gpu::pinned();
      m_guard_staging = gpu::pinned(bytes);
    }
  }

  int m_ordinal;
  device_info m_info;
  unit_limits m_unit;  // what one SM (CU) holds
  gpu::stream m_stream;
  event m_start, m_stop;
  // Recorded after each launch a sample marks (mark_launch), the first m_marked of them this
  // sample; kept from sample to sample (a deque: events do not move).
  std::deque<event> m_marks;
  std::size_t m_marked = 0;
  bool m_sampling = false;
  mapped_flag m_flag;
  buffer m_flush;
  buffer m_sink{sizeof(std::uint64_t)};
  std::uint32_t m_scrubs = 0;
  gpu::shared_scrub_plan m_scrub;                 // how the local memory scrub covers each unit
  buffer m_scrub_arrivals{sizeof(unsigned int)};  // the scrub's blocks so far (they meet)
  gpu::gemm_library m_blas;  // without a library in the build, its gemm() says so
  std::optional<module_cache> m_modules;
  std::vector<hipFunction_t> m_functions;  // compiled this point, by kernel_id
  std::vector<std::uint64_t> m_arg_storage;
  std::vector<void*> m_arg_pointers;
  std::unique_ptr<telemetry> m_telemetry;
  // Released buffers kept for reuse, a quarter of the device's memory at most.
  buffer_pool m_pool{m_info.memory_bytes / 4, free_allocation};
  gpu::pinned m_guard_staging;  // the guards' copies (write_guards, guards_hold)
  buffer m_screen_partials;     // a screen's partial results, allocated at the first screen
  buffer m_hash_partials;       // one u64 per thread of a hash, allocated at the first
  buffer m_hash_folded;         // k_hash_partials u64s per hash of a hash_all()
  std::size_t m_hash_folded_words = 0;
};

// Makes `ordinal` the thread's device before any member allocates on it.
int select_device(int ordinal) {
  check(hipSetDevice(ordinal), "hipSetDevice");
  return ordinal;
}

// The most shared memory a block may have: on CUDA once the kernel opts in above 48 KiB, as
// runtime.hpp's launch does.
// How the local memory scrub takes all of each unit's shared memory: with blocks as large as a
// block may be (the scrub opts in to that on CUDA), or, where the device refuses the scrub that,
// of the 48 KiB every device gives.
gpu::shared_scrub_plan plan_scrub(int ordinal, const device_info& info, std::int64_t per_block) {
  int per_unit = 0, reserved = 0;
  if (hipDeviceGetAttribute(&per_unit, hipDeviceAttributeMaxSharedMemoryPerMultiprocessor,
                            ordinal) != hipSuccess) {
    per_unit = 0;
  }
#if defined(KERNELSCAN_GPU_CUDA)
  if (cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, ordinal) !=
      cudaSuccess) {
    reserved = 0;
  }
#endif
  gpu::shared_scrub_plan plan =
      gpu::plan_shared_scrub(info.compute_units, per_unit, per_block, reserved);
  if (!gpu::allow_shared_scrub_bytes(plan.bytes_per_block)) {
    plan = gpu::plan_shared_scrub(info.compute_units, per_unit,
                                  std::min<std::int64_t>(per_block, 48 * 1024), reserved);
    log_warn("GPU " + std::to_string(ordinal) + ": the local memory scrub may not have " +
             std::to_string(per_block) + " bytes of shared memory a block; it uses " +
             std::to_string(plan.bytes_per_block));
  }
  return plan;
}

hip_backend::hip_backend(int ordinal)
    : m_ordinal(select_device(ordinal)),
      m_info(describe(ordinal)),
      m_unit(unit_limits_of(m_info, ordinal)) {
  // Reading twice the caches' size evicts what a previous sample left in them.
  m_flush = buffer(cache_flush_bytes(m_info));
  m_blas.bind(s());
  // The flush buffer is written once so its pages are resident; each flush then reads it.
  check(hipMemsetAsync(m_flush.get(), 0, m_flush.bytes(), s()), "preparing the cache flush");
  m_scrub = plan_scrub(ordinal, m_info, max_shared());
  check(hipMemsetAsync(m_scrub_arrivals.get(), 0, m_scrub_arrivals.bytes(), s()),
        "preparing the local memory scrub");
  m_modules.emplace(m_info.arch);
  m_telemetry = telemetry::open(m_info.vendor, m_info.pci_bus_id);
  log_info("GPU " + std::to_string(ordinal) + ": " + m_info.name + " (" + m_info.arch + ", " +
           std::to_string(m_info.compute_units) + " CUs, " + gib(double(m_info.memory_bytes)) +
           ", L2 " + std::to_string(m_info.l2_bytes >> 20) +
           " MiB); shared memory scrub: " + std::to_string(m_scrub.blocks_per_unit) + " x " +
           std::to_string(m_scrub.bytes_per_block >> 10) + " KiB per unit, " +
           std::to_string(m_scrub.covered_per_unit >> 10) + " KiB taken; GEMM library: " +
           gpu::gemm_library::name() + "; telemetry: " + (m_telemetry ? "yes" : "none"));
}

hip_backend::~hip_backend() {
  if (!g_context_lost) (void)hipStreamSynchronize(m_stream.get());
  m_pool.clear();
}

void hip_backend::launch(const kernel_call& call) {
  const auto& args = call.args;
  m_arg_storage.assign(args.size(), 0);
  m_arg_pointers.assign(args.size(), nullptr);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    switch (a.what) {
      case launch_argument::kind::buffer: {
        void* p = ptr(a.buffer);
        std::memcpy(&m_arg_storage[i], &p, sizeof p);
        break;
      }
      case launch_argument::kind::scalar:
        std::memcpy(&m_arg_storage[i], a.value.data(), std::min<std::size_t>(a.size, 8));
        break;
      case launch_argument::kind::local:
        throw backend_error(fault_kind::unsupported,
                            "local memory arguments are OpenCL's; a HIP kernel takes dynamic "
                            "shared memory through kernel.shared_bytes");
    }
    m_arg_pointers[i] = &m_arg_storage[i];
  }
  const custom_launch& l = *call.launch;
  if (l.shared_bytes > max_shared()) {
    // The runtime would say only "invalid argument".
    throw backend_error(fault_kind::invalid_launch,
                        "kernel.shared_bytes: the kernel asks for " +
                            std::to_string(l.shared_bytes) +
                            " bytes of dynamic shared memory per block; " + m_info.name +
                            " gives a block at most " + std::to_string(max_shared()) +
                            ", its static shared memory included");
  }
  const hipError_t status = hipModuleLaunchKernel(
      m_functions.at(call.function), unsigned(l.grid[0]), unsigned(l.grid[1]), unsigned(l.grid[2]),
      unsigned(l.block[0]), unsigned(l.block[1]), unsigned(l.block[2]), unsigned(l.shared_bytes),
      s(), m_arg_pointers.data(), nullptr);
  if (status != hipSuccess) {
    explain_refused_block(call);
    check(status, "launching the kernel");
  }
}

// The runtime refuses a block over the kernel's own limit (its __launch_bounds__, or more
// threads than its registers allow) as "invalid value" or "too many resources requested for
// launch"; a refused launch asks the kernel its limit and names it.
void hip_backend::explain_refused_block(const kernel_call& call) {
  gpu_function_attributes a;
  if (gpu_function_attributes_of(m_functions.at(call.function), a) != hipSuccess) {
    (void)hipGetLastError();
    return;
  }
  const auto& block = call.launch->block;
  const std::int64_t threads = block[0] * block[1] * block[2];
  if (a.max_threads <= 0 || threads <= a.max_threads) return;
  (void)hipGetLastError();
  throw backend_error(fault_kind::invalid_launch,
                      "a block of " + std::to_string(threads) + " threads (" + dims_text(block) +
                          ") is more than kernel " + call.launch->kernel->entry + " may have on " +
                          m_info.name + " (" + std::to_string(a.max_threads) +
                          ": its __launch_bounds__, or " + std::to_string(a.registers) +
                          " registers a thread)");
}

std::optional<kernel_resources> hip_backend::resources(kernel_id function,
                                                       const custom_launch& launch) {
  const hipFunction_t f = m_functions.at(function);
  gpu_function_attributes a;
  if (gpu_function_attributes_of(f, a) != hipSuccess) {
    (void)hipGetLastError();
    return std::nullopt;
  }
  kernel_resources r;
  r.registers = a.registers;
  r.shared_bytes = std::uint64_t(a.shared_bytes) + std::uint64_t(launch.shared_bytes);
  r.local_bytes = std::uint64_t(a.local_bytes);
  r.max_block_threads = a.max_threads;
  const std::int64_t threads = launch.block[0] * launch.block[1] * launch.block[2];
  int blocks = 0;
  if (threads > 0 && threads <= a.max_threads &&
      gpu_occupancy(&blocks, f, int(threads), std::size_t(launch.shared_bytes)) == hipSuccess &&
      blocks > 0) {
    const block_use use{threads, a.registers, *r.shared_bytes};
    r.blocks_per_unit = blocks;
    if (const double o = occupancy_of(m_unit, use, blocks); o > 0) r.occupancy = o;
    r.limited_by = occupancy_limits(m_unit, use, blocks);
  } else {
    (void)hipGetLastError();
  }
  return r;
}

void hip_backend::gemm(const gemm_call& call) {
  const gemm_args args = gemm_on(call);
  try {
    switch (call.algorithm) {
      case gemm_algorithm::library:
        m_blas.gemm(args, s());
        return;
      case gemm_algorithm::builtin:
        gemm_builtin(args, s());
        return;
      case gemm_algorithm::reference:
        gemm_reference(args, s());
        return;
    }
  } catch (const backend_error&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw backend_error(fault_kind::unsupported, e.what());
  } catch (const std::runtime_error& e) {
    throw backend_error(fault_kind::internal, e.what());
  }
}

timed_sample hip_backend::time_launches(kernel_role, const std::function<void()>& enqueue) {
  volatile int* flag = m_flag.host();
  flag[0] = 0;
  flag[1] = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  // The stream must be released whatever happens below, or the next sync waits for the timeout.
  struct release_hold {
    volatile int* flag;
    bool& sampling;
    ~release_hold() {
      sampling = false;
      std::atomic_thread_fence(std::memory_order_seq_cst);
      flag[0] = 1;
    }
  };
  m_marked = 0;
  {
    hold_stream(m_flag.device(), k_hold_timeout_ms, s());
    release_hold guard{flag, m_sampling};
    check(hipEventRecord(m_start.get(), s()), "hipEventRecord");
    m_sampling = true;
    enqueue();
    m_sampling = false;
    check(hipEventRecord(m_stop.get(), s()), "hipEventRecord");
  }
  check(hipEventSynchronize(m_stop.get()), "waiting for the kernel");
  const auto elapsed_us = [](const event& from, const event& to) {
    float ms = 0;
    check(hipEventElapsedTime(&ms, from.get(), to.get()), "hipEventElapsedTime");
    return double(ms) * 1000.0;
  };
  // The host was too slow to queue the launches before the hold ran out: the launches may have
  // waited on it, so the sample is not the kernel's time.
  timed_sample t{elapsed_us(m_start, m_stop), flag[1] == 0, {}};
  const event* from = &m_start;
  for (std::size_t i = 0; i < m_marked; ++i) {
    t.launch_us.push_back(elapsed_us(*from, m_marks[i]));
    from = &m_marks[i];
  }
  return t;
}

void hip_backend::mark_launch() {
  if (!m_sampling) return;
  if (m_marked == m_marks.size()) m_marks.emplace_back();
  check(hipEventRecord(m_marks[m_marked++].get(), s()), "hipEventRecord");
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
  return make_hip_engine(ordinal, true);
}

std::unique_ptr<engine> make_hip_engine(int ordinal, bool defences) {
  return std::make_unique<point_runner>(std::make_unique<hip_backend>(ordinal), defences);
}

std::string gpu_platform() {
  int runtime = 0;
  (void)hipRuntimeGetVersion(&runtime);
  return std::string(KERNELSCAN_PLATFORM_NAME) + " " + version_text(runtime);
}

}  // namespace kernelscan

// The OpenCL backend (opencl_backend.hpp): the platform calls of device_backend on OpenCL 1.2.
//
// A timed sample: a user event holds the in-order queue (a barrier waits on it) while the host
// queues the launches, then the host completes it; so the launches run back to back whatever
// the host's enqueue rate, as behind the HIP backend's blocking kernel. The time is the device's
// profiling clock from the start of the first command of the sample to the end of the last.

#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include "engine/opencl/opencl_backend.hpp"

#include <CL/cl.h>
#include <clblast_c.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/buffer_pool.hpp"
#include "engine/cache_flush.hpp"
#include "engine/device_catalog.hpp"
#include "engine/element.hpp"
#include "engine/gemm_layout.hpp"
#include "engine/hip/telemetry.hpp"
#include "engine/host_caches.hpp"
#include "engine/language_support.hpp"
#include "engine/opencl/builtin_kernels.hpp"
#include "engine/opencl/opencl_errors.hpp"
#include "engine/point_kernel.hpp"
#include "engine/point_runner.hpp"
#include "engine/text_list.hpp"

namespace kernelscan {
namespace {

using opencl::cl_phase;

// Vendor extensions that describe a device (cl_ext.h values, declared here so that any
// OpenCL headers build this file).
constexpr cl_device_info k_compute_capability_major_nv = 0x4000;
constexpr cl_device_info k_compute_capability_minor_nv = 0x4001;
constexpr cl_device_info k_pci_bus_id_nv = 0x4008;
constexpr cl_device_info k_pci_slot_id_nv = 0x4009;
constexpr cl_device_info k_pci_domain_id_nv = 0x400A;
constexpr cl_device_info k_topology_amd = 0x4037;
constexpr cl_device_info k_board_name_amd = 0x4038;
constexpr cl_device_info k_pci_bus_info_khr = 0x410F;

constexpr std::size_t k_max_programs = 256;  // user programs cached before the cache starts over
constexpr int k_block = 256;
// Buffers a fill_all() command fills at most (its kernels' arguments).
constexpr std::size_t k_fill_sets = 8;
constexpr std::int64_t k_fill_run = 64;
constexpr std::int64_t k_max_groups = 65536;  // grid-stride loops cover the rest
// The partial results hash_all() reads back at once at most (8 MiB): sixteen of the widest hashes.
constexpr std::int64_t k_hash_batch_words = 1 << 20;
// The words (or elements) a work-item of a hash (or a screen) takes at least on a CPU device,
// where each runs through its own run of them. On PoCL (2 cores), with one each: hashing 64 KiB
// took 50 µs, screening 16384 floats 83–183 µs; with 16 each, 11 and 54–56 µs. Large buffers
// take the most work-items either way (65536: 16 MiB hashed in 0.9 ms, a million floats
// screened in 0.64–0.68 ms; fewer, longer runs were slower).
constexpr std::int64_t k_cpu_run = 16;
constexpr std::uint64_t k_max_cpu_flush = 256ull << 20;

[[noreturn]] void fail(cl_int status, const std::string& what, cl_phase phase) {
  throw backend_error(opencl::classify_cl_status(status, phase),
                      what + ": " + opencl::cl_status_name(status));
}

void check(cl_int status, const char* what, cl_phase phase = cl_phase::enqueue) {
  if (status != CL_SUCCESS) fail(status, what, phase);
}

// Owners of OpenCL objects.
struct release_mem {
  void operator()(cl_mem m) const { clReleaseMemObject(m); }
};
struct release_event {
  void operator()(cl_event e) const { clReleaseEvent(e); }
};
struct release_kernel {
  void operator()(cl_kernel k) const { clReleaseKernel(k); }
};
struct release_program {
  void operator()(cl_program p) const { clReleaseProgram(p); }
};
using mem_ptr = std::unique_ptr<std::remove_pointer_t<cl_mem>, release_mem>;
using event_ptr = std::unique_ptr<std::remove_pointer_t<cl_event>, release_event>;
using kernel_ptr = std::unique_ptr<std::remove_pointer_t<cl_kernel>, release_kernel>;
using program_ptr = std::unique_ptr<std::remove_pointer_t<cl_program>, release_program>;

std::string device_string(cl_device_id d, cl_device_info what) {
  std::size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  if (clGetDeviceInfo(d, what, size, s.data(), nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && (s.back() == '\0' || s.back() == ' '))
    s.pop_back();
  return s.substr(std::min(s.find_first_not_of(' '), s.size()));
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  std::size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  if (clGetPlatformInfo(p, what, size, s.data(), nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && s.back() == '\0')
    s.pop_back();
  return s;
}

template <typename T>
T device_value(cl_device_id d, cl_device_info what, T fallback = T{}) {
  T v{};
  return clGetDeviceInfo(d, what, sizeof v, &v, nullptr) == CL_SUCCESS ? v : fallback;
}

struct cl_device_ref {
  cl_platform_id platform{};
  cl_device_id device{};
};

// Every device of every platform, in the ICD loader's order.
std::vector<cl_device_ref> enumerate_devices() {
  std::vector<cl_device_ref> out;
  cl_uint platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &platforms) != CL_SUCCESS || platforms == 0) return out;
  std::vector<cl_platform_id> ids(platforms);
  if (clGetPlatformIDs(platforms, ids.data(), nullptr) != CL_SUCCESS) return out;
  for (cl_platform_id p : ids) {
    cl_uint n = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0) continue;
    std::vector<cl_device_id> devices(n);
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, devices.data(), nullptr) != CL_SUCCESS) continue;
    for (cl_device_id d : devices)
      out.push_back({p, d});
  }
  return out;
}

bool has_extension(cl_device_id d, const char* name) {
  const std::string ext = " " + device_string(d, CL_DEVICE_EXTENSIONS) + " ";
  return ext.find(" " + std::string(name) + " ") != std::string::npos;
}

std::string format_pci(unsigned domain, unsigned bus, unsigned device, unsigned function) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", domain, bus, device, function);
  return text;
}

// The device's PCI address where an extension tells it, else "".
std::string pci_address(cl_device_id d) {
  if (has_extension(d, "cl_khr_pci_bus_info")) {
    struct {
      cl_uint domain, bus, device, function;
    } info{};
    if (clGetDeviceInfo(d, k_pci_bus_info_khr, sizeof info, &info, nullptr) == CL_SUCCESS) {
      return format_pci(info.domain, info.bus, info.device, info.function);
    }
  }
  if (has_extension(d, "cl_nv_device_attribute_query")) {
    const auto bus = device_value<cl_uint>(d, k_pci_bus_id_nv, ~0u);
    const auto slot = device_value<cl_uint>(d, k_pci_slot_id_nv, ~0u);
    const auto domain = device_value<cl_uint>(d, k_pci_domain_id_nv, 0);
    if (bus != ~0u && slot != ~0u) return format_pci(domain, bus, slot >> 3, slot & 7);
  }
  if (has_extension(d, "cl_amd_device_attribute_query")) {
    union {
      struct {
        cl_uint type;
        cl_uint data[5];
      } raw;
      struct {
        cl_uint type;
        cl_char unused[17];
        cl_char bus, device, function;
      } pcie;
    } topology{};
    if (clGetDeviceInfo(d, k_topology_amd, sizeof topology, &topology, nullptr) == CL_SUCCESS &&
        topology.raw.type == 1) {
      return format_pci(0, std::uint8_t(topology.pcie.bus), std::uint8_t(topology.pcie.device),
                        std::uint8_t(topology.pcie.function));
    }
  }
  return "";
}

device_info describe(const cl_device_ref& ref, int index) {
  const cl_device_id d = ref.device;
  device_info info;
  info.index = index;
  info.engine = engine_kind::opencl;
  const auto type = device_value<cl_device_type>(d, CL_DEVICE_TYPE);
  info.type = (type & CL_DEVICE_TYPE_GPU)   ? "gpu"
              : (type & CL_DEVICE_TYPE_CPU) ? "cpu"
                                            : "accelerator";
  info.vendor = opencl::normalise_vendor(device_string(d, CL_DEVICE_VENDOR));
  info.name = device_string(d, CL_DEVICE_NAME);
  if (info.vendor == "AMD" && info.type == "gpu") {
    // ROCm names the device by its architecture ("gfx942:sramecc+:xnack-") and the part in the
    // board name.
    info.arch = info.name.substr(0, info.name.find(':'));
    const std::string board = device_string(d, k_board_name_amd);
    if (!board.empty()) info.name = board;
  } else if (info.vendor == "NVIDIA" && has_extension(d, "cl_nv_device_attribute_query")) {
    info.arch = "sm_" + std::to_string(device_value<cl_uint>(d, k_compute_capability_major_nv)) +
                std::to_string(device_value<cl_uint>(d, k_compute_capability_minor_nv));
  } else {
    info.arch = info.type;
  }
  info.compute_units = int(device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS));
  info.clock_mhz = double(device_value<cl_uint>(d, CL_DEVICE_MAX_CLOCK_FREQUENCY));
  info.memory_bytes = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  info.l2_bytes = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE);
  // OpenCL tells a work-group's limits, not a compute unit's.
  info.limits.block_threads =
      std::int64_t(device_value<std::size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE));
  info.limits.block_shared_bytes = device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE);
  if (info.type == "cpu") {
    // A CPU device runs on this host: its work-items' data stays in its cores' L2s, nearer than
    // the shared cache the driver reports (and that sysconf tells where it reports none).
    if (info.l2_bytes == 0) info.l2_bytes = host_last_level_cache_bytes();
    const std::uint64_t cores = host_core_caches_bytes(info.compute_units);
    if (cores < info.l2_bytes) info.core_caches_bytes = cores;
  }
  info.pci_bus_id = pci_address(d);
  info.driver = "OpenCL " + platform_string(ref.platform, CL_PLATFORM_NAME) + " (" +
                platform_string(ref.platform, CL_PLATFORM_VERSION) + "), driver " +
                device_string(d, CL_DRIVER_VERSION);
  device_capabilities& c = info.capabilities;
  c.fp64 = has_extension(d, "cl_khr_fp64");
  c.fp16 = has_extension(d, "cl_khr_fp16");
  c.gemm_library = "CLBlast";
  // CLBlast's half GEMM is written in half arithmetic; the built-in one stores f16 and bf16 and
  // computes in float.
  c.gemm_library_types = {dtype::f32};
  c.gemm_builtin_types = {dtype::f32, dtype::f16, dtype::bf16};
  if (c.fp16) c.gemm_library_types.push_back(dtype::f16);
  if (c.fp64) {
    c.gemm_library_types.insert(c.gemm_library_types.begin(), dtype::f64);
    c.gemm_builtin_types.insert(c.gemm_builtin_types.begin(), dtype::f64);
  }
  if (info.type != "cpu") {
    if (const device_model* m = match_device_model(info.name)) {
      info.model = std::string(m->key);
      info.datasheet = m->peaks;
      info.llc_bytes = m->llc_bytes;
    }
    info.llc_bytes = last_level_cache_bytes(info);
  }
  return info;
}

cl_mem mem(const device_buffer* b) {
  return b ? reinterpret_cast<cl_mem>(b->handle()) : nullptr;
}

int variant_code(stream_variant v) {
  return v == stream_variant::copy    ? 0
         : v == stream_variant::scale ? 1
         : v == stream_variant::add   ? 2
                                      : 3;
}

std::size_t round_up(std::int64_t n, std::int64_t step) {
  return std::size_t((std::max<std::int64_t>(n, 1) + step - 1) / step * step);
}

class opencl_backend final : public device_backend {
 public:
  explicit opencl_backend(int index);
  ~opencl_backend() override;

  const device_info& device() const override { return m_info; }
  double launch_latency_us() const override {
    if (const device_model* m = match_device_model(m_info.name); m && m_info.type != "cpu") {
      return m->launch_latency_us;
    }
    return m_info.type == "cpu" ? 20.0 : 10.0;
  }
  std::string gemm_library() const override { return "CLBlast"; }
  bool supports_gemm(gemm_algorithm algorithm, dtype t) const override;

  void begin_point(const point_context&) override {
    m_functions.clear();
    m_fresh.clear();
    m_pool.begin_point();
  }
  bool usable() const override { return !m_lost; }

  // What the pool keeps counts as free: it is given back when an allocation needs the room.
  std::uint64_t free_memory() override {
    const std::uint64_t used = m_allocated - m_pool.bytes();
    return m_info.memory_bytes > used ? m_info.memory_bytes - used : 0;
  }
  std::uint64_t max_allocation() const override { return m_max_allocation; }
  device_buffer allocate_guarded(std::uint64_t bytes, std::uint64_t guard) override;
  void fill(const device_buffer& b, const fill_request& f) override;
  void fill_all(std::span<const fill_target> fills) override;
  void write(const device_buffer& b, std::uint64_t offset, const void* src,
             std::uint64_t bytes) override {
    guard(clEnqueueWriteBuffer(m_queue, mem(&b), CL_TRUE, offset, bytes, src, 0, nullptr, nullptr),
          "copying to the device", cl_phase::wait);
  }
  void read(const device_buffer& b, std::uint64_t offset, void* dst, std::uint64_t bytes) override {
    guard(clEnqueueReadBuffer(m_queue, mem(&b), CL_TRUE, offset, bytes, dst, 0, nullptr, nullptr),
          "reading from the device", cl_phase::wait);
  }
  void copy(const device_buffer& dst, const device_buffer& src, std::uint64_t bytes) override {
    guard(clEnqueueCopyBuffer(m_queue, mem(&src), mem(&dst), 0, 0, bytes, 0, nullptr, nullptr),
          "copying on the device", cl_phase::enqueue);
  }
  std::uint64_t hash(const device_buffer& b, std::uint64_t bytes) override;
  std::vector<std::uint64_t> hash_all(std::span<const hash_ref> refs) override;
  std::optional<output_screen> screen_outputs(const device_buffer& out, const device_buffer& ref,
                                              dtype t, std::int64_t n, double atol,
                                              double rtol) override;
  void xor_keystream(const device_buffer& b, std::uint64_t words, const device_buffer& pad,
                     std::uint64_t pad_words, const device_buffer& periods) override;
  // Through the parent buffer, whose bytes around the sub-buffer are the guards.
  void write_guard(const device_buffer& b, guard_side side, const void* src) override {
    if (!b.guard()) return;
    guard(clEnqueueWriteBuffer(m_queue, reinterpret_cast<cl_mem>(b.base()), CL_TRUE,
                               guard_offset(b, side), b.guard(), src, 0, nullptr, nullptr),
          "copying to the device", cl_phase::wait);
  }
  void read_guard(const device_buffer& b, guard_side side, void* dst) override {
    if (!b.guard()) return;
    guard(clEnqueueReadBuffer(m_queue, reinterpret_cast<cl_mem>(b.base()), CL_TRUE,
                              guard_offset(b, side), b.guard(), dst, 0, nullptr, nullptr),
          "reading from the device", cl_phase::wait);
  }
  // Copies queued without waiting, then one wait for all of them (also where queueing one
  // failed: the host memory they copy is the caller's, or reused, after this returns).
  void write_guards(std::span<const guard_ref> guards, const void* canary) override {
    queue_then_wait([&] {
      for (const auto& g : guards) {
        if (!g.buffer->guard()) continue;
        guard(clEnqueueWriteBuffer(m_queue, reinterpret_cast<cl_mem>(g.buffer->base()), CL_FALSE,
                                   guard_offset(*g.buffer, g.side), g.buffer->guard(), canary, 0,
                                   nullptr, nullptr),
              "copying to the device", cl_phase::enqueue);
      }
    });
  }
  std::vector<bool> guards_hold(std::span<const guard_ref> guards, const void* canary) override {
    m_guard_reads.resize(guard_bytes(guards));
    queue_then_wait([&] {
      std::uint64_t at = 0;
      for (const auto& g : guards) {
        if (!g.buffer->guard()) continue;
        guard(clEnqueueReadBuffer(m_queue, reinterpret_cast<cl_mem>(g.buffer->base()), CL_FALSE,
                                  guard_offset(*g.buffer, g.side), g.buffer->guard(),
                                  m_guard_reads.data() + at, 0, nullptr, nullptr),
              "reading from the device", cl_phase::enqueue);
        at += g.buffer->guard();
      }
    });
    return guards_match(guards, m_guard_reads.data(), canary);
  }

  kernel_id compile(const custom_kernel& kernel) override;
  kernel_id compile_fresh(const custom_kernel& kernel) override;
  void launch(const kernel_call& call) override;
  std::optional<kernel_resources> resources(kernel_id function,
                                            const custom_launch& launch) override;
  void gemm(const gemm_call& call) override;
  void stream(const stream_call& call) override;
  void fma(const device_buffer& out, std::int64_t threads, int iterations) override;
  void synchronize() override {
    guard(clFinish(m_queue), "waiting for the device", cl_phase::wait);
  }

  void flush_caches() override;
  void scrub_local_memory() override;
  timed_sample time_launches(kernel_role role, const std::function<void()>& enqueue) override;
  void mark_launch() override;
  bool marks_are_free() const override { return true; }
  std::optional<telemetry_reading> read_telemetry() override {
    if (!m_telemetry) return std::nullopt;
    return m_telemetry->read();
  }

 private:
  // Into the pool, for the next allocation of the same size; freed where the device was lost.
  void release(const device_buffer& b) noexcept override {
    if (!b.handle()) return;
    const buffer_pool::allocation a{b.handle(), b.base(), b.bytes(), b.guard(),
                                    allocation_bytes(b.bytes(), b.guard())};
    if (m_lost) return free_allocation(a);
    m_pool.keep(a);
  }
  void free_allocation(const buffer_pool::allocation& a) noexcept {
    clReleaseMemObject(reinterpret_cast<cl_mem>(a.handle));
    if (a.base != a.handle) clReleaseMemObject(reinterpret_cast<cl_mem>(a.base));
    m_allocated -= std::min(m_allocated, a.whole);
  }
  device_buffer allocate_new(std::uint64_t bytes, std::uint64_t guard);
  // Where the sub-buffer of a guarded buffer starts in its parent: `guard` rounded up to the
  // device's base address alignment (4096 is a multiple of it on every device we know of, so
  // the leading guard is then the parent's first bytes; elsewhere unused bytes precede it).
  std::uint64_t data_origin(std::uint64_t guard) const {
    return (guard + m_base_align - 1) / m_base_align * m_base_align;
  }
  std::uint64_t allocation_bytes(std::uint64_t bytes, std::uint64_t guard) const {
    return guard ? data_origin(guard) + bytes + guard : bytes;
  }
  // The run of items each work-item of a kernel over `items` takes on a CPU device, whose
  // work-items run one after another on a core: a counted loop over neighbouring items the
  // compiler vectorises, each cache line touched by one work-item. 0 on a GPU: strided, so that
  // neighbouring work-items take neighbouring items.
  cl_long span_of(std::int64_t items, std::size_t threads) const {
    return m_info.type == "cpu" ? cl_long((std::uint64_t(items) + threads - 1) / threads) : 0;
  }
  // The words a work-item of a hash or a screen takes at least: k_cpu_run on a CPU device.
  std::int64_t cpu_run() const { return m_info.type == "cpu" ? k_cpu_run : 1; }
  // The work-items (a multiple of k_block) of such a kernel over `items`, and their span: on a
  // CPU device at most k_word_hash_threads, on a GPU one an item up to k_max_groups blocks.
  struct spread {
    std::size_t threads;
    cl_long span;
  };
  spread spread_over(std::int64_t items) const {
    const std::int64_t most = m_info.type == "cpu" ? k_word_hash_threads : k_max_groups * k_block;
    const std::size_t threads = round_up(std::min(items, most), k_block);
    return {threads, span_of(items, threads)};
  }
  template <typename Queue>
  void queue_then_wait(const Queue& queue) {
    try {
      queue();
    } catch (...) {
      (void)clFinish(m_queue);
      throw;
    }
    synchronize();
  }
  std::uint64_t guard_offset(const device_buffer& b, guard_side side) const {
    const std::uint64_t origin = data_origin(b.guard());
    return side == guard_side::before ? origin - b.guard() : origin + b.bytes();
  }
  // check() that marks the device lost when the fault says so.
  void guard(cl_int status, const char* what, cl_phase phase) {
    if (status == CL_SUCCESS) return;
    if (opencl::classify_cl_status(status, phase) == fault_kind::device_lost) m_lost = true;
    fail(status, what, phase);
  }
  void require_type(dtype t, const char* what) const;
  void check_launch(cl_kernel k, const kernel_call& call, const std::size_t* local) const;
  cl_kernel builtin(dtype t, const char* name);
  // Enqueues `k` over `global` work-items in groups of `local` (1 to 3 dimensions); the event of
  // the launch is kept when a sample is being timed.
  void run(cl_kernel k, cl_uint dims, const std::size_t* global, const std::size_t* local,
           const char* what);
  void sampled(cl_event e);
  template <typename T>
  void arg(cl_kernel k, cl_uint i, const T& v, const char* what) {
    guard(clSetKernelArg(k, i, sizeof v, &v), what, cl_phase::enqueue);
  }

  // Local memory a work-group may have (bytes), as the device's description tells it.
  std::uint64_t local_memory() const { return m_info.limits.block_shared_bytes; }

  device_info m_info;
  cl_device_id m_device{};
  cl_context m_context{};
  cl_command_queue m_queue{};
  bool m_fp64 = false;
  bool m_fp16 = false;
  bool m_lost = false;
  std::uint64_t m_max_allocation = 0;
  std::uint64_t m_base_align = 1;  // bytes a sub-buffer's origin must be a multiple of
  std::uint32_t m_scrubs = 0;
  std::uint64_t m_allocated = 0;  // live buffers and the pool's
  // A quarter of the device's memory at most (set once the device is known).
  buffer_pool m_pool{0, [this](const buffer_pool::allocation& a) { free_allocation(a); }};
  std::map<dtype, program_ptr> m_builtin_programs;
  std::map<std::pair<dtype, std::string>, kernel_ptr> m_builtin_kernels;
  struct user_program {
    program_ptr program;
    kernel_ptr kernel;
  };
  std::map<std::string, user_program> m_programs;  // by compile_key()
  // Programs of their own for compile_fresh(), made this point from a cached program's binary.
  std::vector<user_program> m_fresh;
  std::vector<cl_kernel> m_functions;  // compiled this point, by kernel_id
  mem_ptr m_flush, m_flush_sink, m_scrub_arrivals, m_hash_partials;
  std::int64_t m_hash_partials_words = 0;    // what m_hash_partials holds
  std::vector<unsigned char> m_guard_reads;  // guards_hold()'s copies of the guards
  std::uint64_t m_flush_bytes = 0;
  // While a sample is timed: the first and the last command it enqueued, the first command of
  // the launch being enqueued, and of each launch marked (mark_launch) its first command (where
  // it had one of its own) and its last.
  bool m_sampling = false;
  event_ptr m_first, m_last, m_launch_first;
  std::vector<std::pair<event_ptr, event_ptr>> m_marks;
  bool m_first_is_marker = false;
  std::unique_ptr<telemetry> m_telemetry;
};

opencl_backend::opencl_backend(int index) {
  const auto devices = enumerate_devices();
  if (index < 0 || std::size_t(index) >= devices.size()) {
    throw std::runtime_error("no OpenCL device " + std::to_string(index) + " (" +
                             std::to_string(devices.size()) + " found)");
  }
  const cl_device_ref ref = devices[std::size_t(index)];
  m_device = ref.device;
  m_info = describe(ref, index);
  m_fp64 = m_info.capabilities.fp64;
  m_fp16 = m_info.capabilities.fp16;
  m_max_allocation = device_value<cl_ulong>(m_device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  // Given in bits.
  m_base_align = std::max<std::uint64_t>(
      1, device_value<cl_uint>(m_device, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8);
  cl_int status = CL_SUCCESS;
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                         reinterpret_cast<cl_context_properties>(ref.platform), 0};
  m_context = clCreateContext(props, 1, &m_device, nullptr, nullptr, &status);
  if (status != CL_SUCCESS) {
    throw std::runtime_error("clCreateContext: " + opencl::cl_status_name(status));
  }
  m_queue = clCreateCommandQueue(m_context, m_device, CL_QUEUE_PROFILING_ENABLE, &status);
  if (status != CL_SUCCESS) {
    clReleaseContext(m_context);
    throw std::runtime_error("clCreateCommandQueue: " + opencl::cl_status_name(status));
  }
  // Reading twice the caches' size evicts what a previous sample left in them. A CPU reports
  // the last-level cache of its whole socket; the cores of one worker hold far less, so its
  // flush stops at k_max_cpu_flush.
  m_flush_bytes = cache_flush_bytes(m_info);
  if (m_info.type == "cpu") m_flush_bytes = std::min(m_flush_bytes, k_max_cpu_flush);
  m_flush_bytes = std::min(m_flush_bytes, m_max_allocation);
  m_pool.set_capacity(m_info.memory_bytes / 4);
  if (!m_info.pci_bus_id.empty()) m_telemetry = telemetry::open(m_info.vendor, m_info.pci_bus_id);
  spdlog::info(
      "OpenCL device {}: {} ({}, {}, {} compute units, {} of memory, largest buffer {}); "
      "fp64 {}, fp16 {}; telemetry: {}",
      index, m_info.name, m_info.type, m_info.driver, m_info.compute_units,
      gib(double(m_info.memory_bytes)), gib(double(m_max_allocation)), m_fp64 ? "yes" : "no",
      m_fp16 ? "yes" : "no", m_telemetry ? "yes" : "none");
}

opencl_backend::~opencl_backend() {
  if (!m_lost) clFinish(m_queue);
  m_pool.clear();
  m_first.reset();
  m_last.reset();
  m_marks.clear();
  m_functions.clear();
  m_fresh.clear();
  m_programs.clear();
  m_builtin_kernels.clear();
  m_builtin_programs.clear();
  m_flush.reset();
  m_flush_sink.reset();
  m_scrub_arrivals.reset();
  m_hash_partials.reset();
  m_hash_partials_words = 0;
  clReleaseCommandQueue(m_queue);
  clReleaseContext(m_context);
}

bool opencl_backend::supports_gemm(gemm_algorithm algorithm, dtype t) const {
  const device_capabilities& c = m_info.capabilities;
  const auto in = [t](const std::vector<dtype>& types) {
    return std::find(types.begin(), types.end(), t) != types.end();
  };
  switch (algorithm) {
    case gemm_algorithm::library:
      return in(c.gemm_library_types);
    case gemm_algorithm::builtin:
      return in(c.gemm_builtin_types);
    case gemm_algorithm::reference:
      return t != dtype::f64 || m_fp64;
  }
  return false;
}

void opencl_backend::require_type(dtype t, const char* what) const {
  if (t == dtype::f64 && !m_fp64) {
    throw backend_error(
        fault_kind::unsupported,
        std::string(what) + ": f64 needs cl_khr_fp64, which " + m_info.name + " does not have");
  }
}

// One the pool kept, where it has one of this size; else a new one, for which the pool gives
// back what it keeps when the device has no room beside it, or when the allocation fails.
device_buffer opencl_backend::allocate_guarded(std::uint64_t bytes, std::uint64_t guard) {
  if (bytes == 0) return device_buffer(this, 0, 0);
  if (const auto a = m_pool.take(bytes, guard)) {
    return device_buffer(this, a->handle, a->bytes, a->guard, a->base);
  }
  if (m_allocated + allocation_bytes(bytes, guard) > m_info.memory_bytes) m_pool.clear();
  try {
    return allocate_new(bytes, guard);
  } catch (const backend_error& e) {
    if (e.kind() != fault_kind::out_of_memory || m_pool.empty()) throw;
  }
  m_pool.clear();
  return allocate_new(bytes, guard);
}

// A guarded buffer is a parent buffer holding the guards and the data, and a sub-buffer of the
// data that everything else (kernel arguments, fills, copies, CLBlast) is given: a kernel writing
// before or past the sub-buffer writes into the parent's guards, as on any device memory.
device_buffer opencl_backend::allocate_new(std::uint64_t bytes, std::uint64_t guard) {
  const std::uint64_t whole = allocation_bytes(bytes, guard);
  cl_int status = CL_SUCCESS;
  mem_ptr parent(clCreateBuffer(m_context, CL_MEM_READ_WRITE, whole, nullptr, &status));
  if (status != CL_SUCCESS) {
    fail(status, "allocating " + gib(double(whole)) + " on the device", cl_phase::allocate);
  }
  if (guard == 0) {
    m_allocated += whole;
    return device_buffer(this, reinterpret_cast<std::uintptr_t>(parent.release()), bytes);
  }
  const cl_buffer_region region{data_origin(guard), bytes};
  cl_mem data = clCreateSubBuffer(parent.get(), CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                                  &region, &status);
  if (status != CL_SUCCESS) {
    fail(status,
         "making the data of a guarded buffer (" + std::to_string(bytes) + " bytes at offset " +
             std::to_string(region.origin) + ", base address alignment " +
             std::to_string(m_base_align) + " bytes) a sub-buffer",
         cl_phase::allocate);
  }
  m_allocated += whole;
  return device_buffer(this, reinterpret_cast<std::uintptr_t>(data), bytes, guard,
                       reinterpret_cast<std::uintptr_t>(parent.release()));
}

cl_kernel opencl_backend::builtin(dtype t, const char* name) {
  const auto key = std::make_pair(t, std::string(name));
  if (auto it = m_builtin_kernels.find(key); it != m_builtin_kernels.end()) {
    return it->second.get();
  }
  auto& program = m_builtin_programs[t];
  if (!program) {
    const std::string source = opencl::element_prelude(t, m_fp64) + opencl::k_builtin_source;
    const char* text = source.c_str();
    cl_int status = CL_SUCCESS;
    program.reset(clCreateProgramWithSource(m_context, 1, &text, nullptr, &status));
    check(status, "creating the builtin program", cl_phase::other);
    status = clBuildProgram(program.get(), 1, &m_device, "-cl-std=CL1.2", nullptr, nullptr);
    if (status != CL_SUCCESS) {
      std::size_t size = 0;
      clGetProgramBuildInfo(program.get(), m_device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
      std::string log(size, '\0');
      clGetProgramBuildInfo(program.get(), m_device, CL_PROGRAM_BUILD_LOG, size, log.data(),
                            nullptr);
      program.reset();
      throw backend_error(fault_kind::internal,
                          "the builtin kernels for " + std::string(to_string(t)) +
                              " did not build: " + opencl::cl_status_name(status) + "\n" + log);
    }
  }
  cl_int status = CL_SUCCESS;
  kernel_ptr k(clCreateKernel(program.get(), name, &status));
  check(status, name, cl_phase::other);
  return m_builtin_kernels.emplace(key, std::move(k)).first->second.get();
}

void opencl_backend::sampled(cl_event e) {
  if (!e) return;
  if (!m_first) {
    m_first.reset(e);
    m_first_is_marker = false;
    clRetainEvent(e);
  }
  if (!m_launch_first) {
    m_launch_first.reset(e);
    clRetainEvent(e);
  }
  m_last.reset(e);
}

void opencl_backend::run(cl_kernel k, cl_uint dims, const std::size_t* global,
                         const std::size_t* local, const char* what) {
  cl_event e = nullptr;
  guard(clEnqueueNDRangeKernel(m_queue, k, dims, nullptr, global, local, 0, nullptr,
                               m_sampling ? &e : nullptr),
        what, cl_phase::enqueue);
  sampled(e);
}

void opencl_backend::fill(const device_buffer& b, const fill_request& f) {
  if (f.count <= 0) return;
  if (f.kind == fill_kind::value || f.kind == fill_kind::unwritten) {
    unsigned char pattern[8];
    if (f.kind == fill_kind::value) {
      store_element(f.type, f.value, pattern);
    } else {
      store_unwritten(f.type, pattern, f.pattern);
    }
    guard(clEnqueueFillBuffer(m_queue, mem(&b), pattern, size_of(f.type), 0,
                              std::size_t(f.count) * size_of(f.type), 0, nullptr, nullptr),
          "filling a buffer", cl_phase::enqueue);
    return;
  }
  require_type(f.type, "filling a buffer");
  const bool random = f.kind == fill_kind::random;
  cl_kernel k = builtin(f.type, random ? "fill_random" : "fill_arange");
  arg(k, 0, mem(&b), "fill");
  arg(k, 1, cl_long(f.count), "fill");
  if (random) arg(k, 2, cl_ulong(f.seed), "fill");
  // In runs on a CPU device: one element per work-item, a random f32 fill took 3 ns an element
  // on PoCL, five times a constant one.
  const auto [global, span] = spread_over(f.count);
  arg(k, random ? 3 : 2, span, "fill");
  const std::size_t local = k_block;
  run(k, 1, &global, &local, random ? "fill_random" : "fill_arange");
}

// Fills of one kind, type and length (group_fills), k_fill_sets to a command: random ones by
// fill_random_sets, constant and unwritten ones by fill_words_sets. A batched hot sample on PoCL
// refreshed 85 sets of three 4 KiB buffers in 255 commands of several microseconds each, and
// the defended runner took a seventh of the plain one's samples in the same time.
void opencl_backend::fill_all(std::span<const fill_target> fills) {
  const grouped_fills grouped = group_fills(fills, k_fill_sets);
  for (const fill_target* t : grouped.single)
    fill(*t->buffer, t->request);
  // On a CPU device runs of at least k_fill_run elements a work-item, which its loop
  // vectorises: with one element each (the kilobyte buffers of a batch's sets) most of a
  // sample's fill went in drawing each element's segment.
  const bool cpu = m_info.type == "cpu";
  for (const fill_group& g : grouped.groups) {
    if (g.random) require_type(g.type, "filling a buffer");
    cl_kernel k =
        g.random ? builtin(g.type, "fill_random_sets") : builtin(dtype::f32, "fill_words_sets");
    const std::size_t runs =
        std::size_t(std::min(k_word_hash_threads, (g.count + k_fill_run - 1) / k_fill_run));
    const auto [threads, span] = cpu ? spread{runs, span_of(g.count, runs)} : spread_over(g.count);
    arg(k, 0, cl_long(g.count), "fill");
    arg(k, 1, span, "fill");
    if (!g.random) arg(k, 2, cl_ulong(g.word), "fill");
    // The arguments past the group's buffers repeat its last one; no work-item reads them.
    for (std::size_t j = 0; j < k_fill_sets; ++j) {
      const fill_target& t = *g.members[std::min(j, g.members.size() - 1)];
      if (g.random) {
        arg(k, cl_uint(2 + 2 * j), mem(t.buffer), "fill");
        arg(k, cl_uint(3 + 2 * j), cl_ulong(t.request.seed), "fill");
      } else {
        arg(k, cl_uint(3 + j), mem(t.buffer), "fill");
      }
    }
    const std::size_t global[2] = {threads, g.members.size()}, local[2] = {k_block, 1};
    run(k, 2, global, cpu ? nullptr : local, g.random ? "fill_random_sets" : "fill_words_sets");
  }
}

std::uint64_t opencl_backend::hash(const device_buffer& b, std::uint64_t bytes) {
  const hash_ref one{&b, bytes};
  return hash_all({&one, 1}).front();
}

// The words on the device (a kernel reads each buffer where it is, on every compute unit), the
// partial results of as many buffers as k_hash_batch_words holds read back together.
std::vector<std::uint64_t> opencl_backend::hash_all(std::span<const hash_ref> refs) {
  return hash_by_words(
      refs,
      [&](std::span<const word_job> jobs) {
        std::vector<std::vector<std::uint64_t>> out;
        out.reserve(jobs.size());
        cl_kernel k = builtin(dtype::f32, "hash_words");
        for (std::size_t at = 0; at < jobs.size();) {
          // The jobs whose partials fit the batch (one at least).
          std::size_t end = at;
          std::int64_t words = 0;
          while (end < jobs.size() &&
                 (end == at || words + jobs[end].threads <= k_hash_batch_words))
            words += jobs[end++].threads;
          if (m_hash_partials_words < words) {
            m_hash_partials.reset();
            m_hash_partials_words = 0;
            const std::int64_t size = std::max(words, k_word_hash_threads);
            cl_int status = CL_SUCCESS;
            m_hash_partials.reset(clCreateBuffer(m_context, CL_MEM_READ_WRITE,
                                                 std::size_t(size) * sizeof(cl_ulong), nullptr,
                                                 &status));
            if (status != CL_SUCCESS) {
              m_hash_partials.reset();
              fail(status, "allocating the hash's partial results", cl_phase::allocate);
            }
            m_hash_partials_words = size;
          }
          cl_long first = 0;
          for (std::size_t j = at; j < end; ++j) {
            arg(k, 0, mem(jobs[j].buffer), "hash");
            arg(k, 1, cl_long(jobs[j].words), "hash");
            arg(k, 2, m_hash_partials.get(), "hash");
            // In runs on a CPU device: strided by the work-items' number, every word came from
            // another cache line (a 16 MiB hash took 10 ms on PoCL).
            arg(k, 3, span_of(jobs[j].words, std::size_t(jobs[j].threads)), "hash");
            arg(k, 4, first, "hash");
            const std::size_t local = k_block, global = std::size_t(jobs[j].threads);
            run(k, 1, &global, &local, "hash_words");
            first += cl_long(jobs[j].threads);
          }
          std::vector<std::uint64_t> partial(static_cast<std::size_t>(words));
          guard(clEnqueueReadBuffer(m_queue, m_hash_partials.get(), CL_TRUE, 0,
                                    partial.size() * sizeof(std::uint64_t), partial.data(), 0,
                                    nullptr, nullptr),
                "reading the hash", cl_phase::wait);
          for (auto from = partial.begin(); at < end; ++at) {
            out.emplace_back(from, from + jobs[at].threads);
            from += jobs[at].threads;
          }
        }
        return out;
      },
      cpu_run());
}

// On the device, its work-items as the hash's: a partial result a work-group comes back.
std::optional<output_screen> opencl_backend::screen_outputs(const device_buffer& out,
                                                            const device_buffer& ref, dtype t,
                                                            std::int64_t n, double atol,
                                                            double rtol) {
  if (!m_fp64) return std::nullopt;
  output_screen found;
  if (n <= 0) return found;
  cl_kernel k = builtin(t, "screen_outputs");
  const auto threads = std::size_t(word_threads(n, cpu_run()));
  const std::size_t groups = threads / k_block;
  // The counts, then the sums' bits, in one buffer read back at once.
  const device_buffer parts = allocate(groups * 3 * sizeof(cl_ulong));
  arg(k, 0, mem(&out), "screening outputs");
  arg(k, 1, mem(&ref), "screening outputs");
  arg(k, 2, cl_long(n), "screening outputs");
  arg(k, 3, cl_double(atol), "screening outputs");
  arg(k, 4, cl_double(rtol), "screening outputs");
  // An integer element holding either unwritten pattern is irregular (the host tells which).
  arg(k, 5, cl_long(unwritten_integer(t, 0)), "screening outputs");
  arg(k, 6, cl_long(unwritten_integer(t, 1)), "screening outputs");
  arg(k, 7, span_of(n, threads), "screening outputs");
  arg(k, 8, mem(&parts), "screening outputs");
  const std::size_t local = k_block;
  run(k, 1, &threads, &local, "screen_outputs");
  std::vector<cl_ulong> read_back(groups * 3);
  read(parts, 0, read_back.data(), read_back.size() * sizeof(cl_ulong));
  for (std::size_t g = 0; g < groups; ++g) {
    found.irregular += read_back[g];
    found.sum_sq_diff += std::bit_cast<double>(read_back[groups + 2 * g]);
    found.sum_sq_ref += std::bit_cast<double>(read_back[groups + 2 * g + 1]);
  }
  return found;
}

// On the device, in runs on a CPU device as the hash reads words.
void opencl_backend::xor_keystream(const device_buffer& b, std::uint64_t words,
                                   const device_buffer& pad, std::uint64_t pad_words,
                                   const device_buffer& periods) {
  if (words == 0) return;
  cl_kernel k = builtin(dtype::f32, "xor_keystream");
  arg(k, 0, mem(&b), "masking");
  arg(k, 1, cl_long(words), "masking");
  arg(k, 2, mem(&pad), "masking");
  arg(k, 3, cl_int(std::countr_zero(pad_words)), "masking");
  arg(k, 4, mem(&periods), "masking");
  const auto [threads, span] = spread_over(std::int64_t(words));
  arg(k, 5, span, "masking");
  const std::size_t local = k_block;
  run(k, 1, &threads, &local, "xor_keystream");
}

void opencl_backend::stream(const stream_call& call) {
  const auto& s = *call.stream;
  require_type(s.type, "stream");
  cl_kernel k = builtin(s.type, call.reference ? "stream_reference" : "stream_op");
  arg(k, 0, cl_int(variant_code(s.variant)), "stream");
  arg(k, 1, cl_long(s.n), "stream");
  // The scalar is the kernel's ACC (double for f64 and wide integers where the device has f64)
  // or, for the reference, its ref_t.
  const bool acc_double = m_fp64 && (s.type == dtype::f64 || s.type == dtype::i64 ||
                                     s.type == dtype::i32 || s.type == dtype::u32);
  if (call.reference ? m_fp64 : acc_double) {
    arg(k, 2, cl_double(s.scalar), "stream");
  } else {
    arg(k, 2, cl_float(s.scalar), "stream");
  }
  arg(k, 3, mem(call.a), "stream");
  arg(k, 4, mem(call.b), "stream");
  arg(k, 5, mem(call.c), "stream");
  const std::size_t local = k_block;
  std::size_t global = round_up(s.n, k_block);
  if (!call.reference) {
    // On a CPU device a run of neighbouring elements per work-item; on a GPU strided.
    const auto [threads, span] = spread_over(s.n);
    global = threads;
    arg(k, 6, span, "stream");
  }
  run(k, 1, &global, &local, call.reference ? "stream_reference" : "stream");
}

void opencl_backend::gemm(const gemm_call& call) {
  const gemm_instance& g = *call.gemm;
  require_type(g.type, "gemm");
  if (call.algorithm == gemm_algorithm::library) {
    if (!supports_gemm(gemm_algorithm::library, g.type)) {
      throw backend_error(fault_kind::unsupported,
                          "impl \"library\": CLBlast has no " + std::string(to_string(g.type)) +
                              " GEMM on " + m_info.name +
                              (g.type == dtype::f16 ? " (it needs cl_khr_fp16)" : "") +
                              "; use impl \"builtin\"");
    }
    const auto trans_a = g.layout_a == layout::col ? CLBlastTransposeYes : CLBlastTransposeNo;
    const auto trans_b = g.layout_b == layout::col ? CLBlastTransposeYes : CLBlastTransposeNo;
    const std::size_t lda = std::size_t(g.layout_a == layout::row ? g.k : g.m);
    const std::size_t ldb = std::size_t(g.layout_b == layout::row ? g.n : g.k);
    const std::size_t ldc = std::size_t(g.n);
    const auto m = std::size_t(g.m), n = std::size_t(g.n), k = std::size_t(g.k);
    // CLBlast may enqueue several kernels per call and hands back the last one's event: a
    // marker stands for the start of a sample that begins with a library call.
    if (m_sampling && !m_first) {
      cl_event marker = nullptr;
      guard(clEnqueueMarkerWithWaitList(m_queue, 0, nullptr, &marker), "marking the start",
            cl_phase::enqueue);
      m_first.reset(marker);
      m_first_is_marker = true;
    }
    cl_event event = nullptr;
    CLBlastStatusCode status = CLBlastSuccess;
    switch (g.type) {
      case dtype::f32:
        status = CLBlastSgemm(CLBlastLayoutRowMajor, trans_a, trans_b, m, n, k, float(g.alpha),
                              mem(call.a), 0, lda, mem(call.b), 0, ldb, float(g.beta), mem(call.c),
                              0, ldc, &m_queue, &event);
        break;
      case dtype::f64:
        status =
            CLBlastDgemm(CLBlastLayoutRowMajor, trans_a, trans_b, m, n, k, g.alpha, mem(call.a), 0,
                         lda, mem(call.b), 0, ldb, g.beta, mem(call.c), 0, ldc, &m_queue, &event);
        break;
      default:
        status = CLBlastHgemm(CLBlastLayoutRowMajor, trans_a, trans_b, m, n, k,
                              encode_f16(float(g.alpha)), mem(call.a), 0, lda, mem(call.b), 0, ldb,
                              encode_f16(float(g.beta)), mem(call.c), 0, ldc, &m_queue, &event);
        break;
    }
    if (status != CLBlastSuccess) {
      if (event) clReleaseEvent(event);
      if (status > -1000) guard(cl_int(status), "CLBlast GEMM", cl_phase::enqueue);
      throw backend_error(fault_kind::internal,
                          "CLBlast GEMM: CLBlast status " + std::to_string(int(status)));
    }
    if (m_sampling) {
      m_last.reset(event);
    } else if (event) {
      clReleaseEvent(event);
    }
    return;
  }

  const gemm_strides st = strides_of(g.m, g.n, g.k, g.layout_a, g.layout_b);
  const bool reference = call.algorithm == gemm_algorithm::reference;
  if (!reference && !supports_gemm(gemm_algorithm::builtin, g.type)) {
    throw backend_error(fault_kind::unsupported,
                        "gemm: the builtin kernel takes f64, f32, f16 or bf16");
  }
  cl_kernel k = builtin(g.type, reference ? "gemm_reference" : "gemm_tiled");
  const char* what = reference ? "gemm_reference" : "gemm_tiled";
  arg(k, 0, cl_long(g.m), what);
  arg(k, 1, cl_long(g.n), what);
  arg(k, 2, cl_long(g.k), what);
  arg(k, 3, mem(call.a), what);
  arg(k, 4, cl_long(st.a_row), what);
  arg(k, 5, cl_long(st.a_col), what);
  arg(k, 6, mem(call.b), what);
  arg(k, 7, cl_long(st.b_row), what);
  arg(k, 8, cl_long(st.b_col), what);
  arg(k, 9, mem(call.c), what);
  const bool wide = reference ? m_fp64 : g.type == dtype::f64;
  if (wide) {
    arg(k, 10, cl_double(g.alpha), what);
    arg(k, 11, cl_double(g.beta), what);
  } else {
    arg(k, 10, cl_float(g.alpha), what);
    arg(k, 11, cl_float(g.beta), what);
  }
  if (reference) {
    const std::size_t local = k_block;
    const std::size_t global = round_up(g.m * g.n, k_block);
    run(k, 1, &global, &local, what);
  } else {
    const std::size_t local[2] = {256, 1};
    const std::size_t global[2] = {std::size_t((g.n + 63) / 64) * 256,
                                   std::size_t((g.m + 63) / 64)};
    run(k, 2, global, local, what);
  }
}

void opencl_backend::fma(const device_buffer& out, std::int64_t threads, int iterations) {
  cl_kernel k = builtin(dtype::f32, "fma_peak");
  arg(k, 0, mem(&out), "fma");
  arg(k, 1, cl_int(iterations), "fma");
  const std::size_t local = k_block;
  const std::size_t global = round_up(threads, k_block);
  run(k, 1, &global, &local, "fma_peak");
}

kernel_id opencl_backend::compile(const custom_kernel& kernel) {
  if (auto why = unsupported_language(kernel.language, m_info)) {
    throw backend_error(fault_kind::unsupported, *why);
  }
  std::string options;
  for (const auto& o : kernel.compile_options)
    options += (options.empty() ? "" : " ") + o;
  const std::string key = compile_key(kernel);
  auto it = m_programs.find(key);
  if (it == m_programs.end()) {
    if (m_programs.size() >= k_max_programs) m_programs.clear();
    const char* text = kernel.source.c_str();
    const std::size_t length = kernel.source.size();
    cl_int status = CL_SUCCESS;
    program_ptr program(clCreateProgramWithSource(m_context, 1, &text, &length, &status));
    check(status, "creating the program", cl_phase::other);
    status = clBuildProgram(program.get(), 1, &m_device, options.c_str(), nullptr, nullptr);
    if (status != CL_SUCCESS) {
      std::size_t size = 0;
      clGetProgramBuildInfo(program.get(), m_device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
      std::string log(size, '\0');
      clGetProgramBuildInfo(program.get(), m_device, CL_PROGRAM_BUILD_LOG, size, log.data(),
                            nullptr);
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
        log.pop_back();
      throw compile_error("the kernel did not compile (" + opencl::cl_status_name(status) + ")" +
                          (log.empty() ? "" : ":\n" + opencl::readable_build_log(log)));
    }
    kernel_ptr k(clCreateKernel(program.get(), kernel.entry.c_str(), &status));
    if (status == CL_INVALID_KERNEL_NAME) {
      throw compile_error("entry \"" + kernel.entry +
                          "\" is not a __kernel function of the source");
    }
    check(status, "creating the kernel", cl_phase::other);
    it = m_programs.emplace(key, user_program{std::move(program), std::move(k)}).first;
  }
  m_functions.push_back(it->second.kernel.get());
  return m_functions.size() - 1;
}

kernel_id opencl_backend::compile_fresh(const custom_kernel& kernel) {
  const cl_kernel cached = m_functions.at(compile(kernel));
  m_functions.pop_back();
  cl_program source = nullptr;
  check(clGetKernelInfo(cached, CL_KERNEL_PROGRAM, sizeof source, &source, nullptr),
        "finding the kernel's program", cl_phase::other);
  std::string options;
  for (const auto& o : kernel.compile_options)
    options += (options.empty() ? "" : " ") + o;
  // The program's binary loaded again: a new program, whose program-scope variables start
  // over, without compiling the source again. A driver that keeps no binary builds the source.
  std::size_t size = 0;
  check(clGetProgramInfo(source, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr),
        "reading the program's binary size", cl_phase::other);
  cl_int status = CL_SUCCESS;
  program_ptr program;
  if (size > 0) {
    std::vector<unsigned char> binary(size);
    unsigned char* binaries[] = {binary.data()};
    check(clGetProgramInfo(source, CL_PROGRAM_BINARIES, sizeof binaries, binaries, nullptr),
          "reading the program's binary", cl_phase::other);
    const unsigned char* loaded[] = {binary.data()};
    cl_int binary_status = CL_SUCCESS;
    program.reset(
        clCreateProgramWithBinary(m_context, 1, &m_device, &size, loaded, &binary_status, &status));
  } else {
    const char* text = kernel.source.c_str();
    const std::size_t length = kernel.source.size();
    program.reset(clCreateProgramWithSource(m_context, 1, &text, &length, &status));
  }
  check(status, "loading the kernel's program afresh", cl_phase::other);
  check(clBuildProgram(program.get(), 1, &m_device, options.c_str(), nullptr, nullptr),
        "building the kernel's program afresh", cl_phase::other);
  kernel_ptr k(clCreateKernel(program.get(), kernel.entry.c_str(), &status));
  check(status, "creating the kernel afresh", cl_phase::other);
  m_functions.push_back(k.get());
  m_fresh.push_back(user_program{std::move(program), std::move(k)});
  return m_functions.size() - 1;
}

void opencl_backend::launch(const kernel_call& call) {
  const custom_launch& l = *call.launch;
  if (l.shared_bytes > 0) {
    throw backend_error(
        fault_kind::unsupported,
        "kernel.shared_bytes is HIP's dynamic shared memory; an OpenCL kernel takes "
        "work-group local memory as an argument with \"local\": true");
  }
  cl_kernel k = m_functions.at(call.function);
  cl_uint params = 0;
  check(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof params, &params, nullptr),
        "reading the kernel's parameters", cl_phase::other);
  if (params != call.args.size()) {
    throw backend_error(fault_kind::invalid_launch,
                        "kernel " + l.kernel->entry + " takes " + std::to_string(params) +
                            " parameters but args lists " + std::to_string(call.args.size()));
  }
  for (cl_uint i = 0; i < params; ++i) {
    const auto& a = call.args[i];
    cl_int status = CL_SUCCESS;
    switch (a.what) {
      case launch_argument::kind::buffer: {
        const cl_mem m = mem(a.buffer);
        status = clSetKernelArg(k, i, sizeof m, &m);
        break;
      }
      case launch_argument::kind::scalar:
        status = clSetKernelArg(k, i, a.size, a.value.data());
        break;
      case launch_argument::kind::local:
        status = clSetKernelArg(k, i, a.size, nullptr);
        break;
    }
    if (status != CL_SUCCESS) {
      const fault_kind kind = opencl::classify_cl_status(status, cl_phase::enqueue);
      throw backend_error(kind, "setting argument " + std::to_string(i) + " (" +
                                    call.kernel->args[i].name +
                                    "): " + opencl::cl_status_name(status) +
                                    " — does its type match the kernel's parameter?");
    }
  }
  std::size_t global[3], local[3];
  for (int d = 0; d < 3; ++d) {
    local[d] = std::size_t(l.block[std::size_t(d)]);
    global[d] = std::size_t(l.grid[std::size_t(d)]) * local[d];
  }
  check_launch(k, call, local);
  run(k, 3, global, local, "launching the kernel");
}

// OpenCL tells a kernel's work-group limits and memory, not its registers or occupancy. Its
// local memory size counts the `local` arguments the last launch set. A CPU device's private
// memory size is not the kernel's (PoCL answers 1 KiB for 8 bytes and for 16 KiB of arrays).
std::optional<kernel_resources> opencl_backend::resources(kernel_id function,
                                                          const custom_launch& /*launch*/) {
  const cl_kernel k = m_functions.at(function);
  kernel_resources r;
  std::size_t size = 0;
  if (clGetKernelWorkGroupInfo(k, m_device, CL_KERNEL_WORK_GROUP_SIZE, sizeof size, &size,
                               nullptr) == CL_SUCCESS &&
      size > 0) {
    r.max_block_threads = std::int64_t(size);
  }
  if (clGetKernelWorkGroupInfo(k, m_device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                               sizeof size, &size, nullptr) == CL_SUCCESS &&
      size > 0) {
    r.block_multiple = std::int64_t(size);
  }
  cl_ulong bytes = 0;
  if (clGetKernelWorkGroupInfo(k, m_device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof bytes, &bytes,
                               nullptr) == CL_SUCCESS) {
    r.shared_bytes = bytes;
  }
  if (m_info.type != "cpu" &&
      clGetKernelWorkGroupInfo(k, m_device, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof bytes, &bytes,
                               nullptr) == CL_SUCCESS) {
    r.local_bytes = bytes;
  }
  return r;
}

// What the device would refuse (or, some drivers, crash on) is refused here with the limits
// named: the work-group size for this kernel and per dimension, and local memory per group.
void opencl_backend::check_launch(cl_kernel k, const kernel_call& call,
                                  const std::size_t* local) const {
  const std::size_t threads = local[0] * local[1] * local[2];
  std::size_t kernel_max = 0;
  if (clGetKernelWorkGroupInfo(k, m_device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kernel_max,
                               &kernel_max, nullptr) == CL_SUCCESS &&
      kernel_max > 0 && threads > kernel_max) {
    throw backend_error(fault_kind::invalid_launch,
                        "a work-group of " + std::to_string(threads) + " work-items (block " +
                            dims_text(local) + ") is more than this kernel may have on " +
                            m_info.name + " (" + std::to_string(kernel_max) + ")");
  }
  // A kernel compiled with reqd_work_group_size runs in work-groups of that size only; the
  // driver says no more than CL_INVALID_WORK_GROUP_SIZE.
  std::size_t required[3] = {};
  if (clGetKernelWorkGroupInfo(k, m_device, CL_KERNEL_COMPILE_WORK_GROUP_SIZE, sizeof required,
                               required, nullptr) == CL_SUCCESS &&
      required[0] * required[1] * required[2] > 0 && !std::equal(required, required + 3, local)) {
    throw backend_error(fault_kind::invalid_launch,
                        "kernel " + call.launch->kernel->entry + " declares reqd_work_group_size(" +
                            std::to_string(required[0]) + ", " + std::to_string(required[1]) +
                            ", " + std::to_string(required[2]) + "), but the launch's block is " +
                            dims_text(local));
  }
  std::size_t dims[3] = {};
  if (clGetDeviceInfo(m_device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof dims, dims, nullptr) ==
      CL_SUCCESS) {
    for (int d = 0; d < 3; ++d) {
      if (dims[d] > 0 && local[d] > dims[d]) {
        throw backend_error(fault_kind::invalid_launch,
                            "block[" + std::to_string(d) + "] = " + std::to_string(local[d]) +
                                " is more than " + m_info.name + " allows (" +
                                std::to_string(dims[d]) + ")");
      }
    }
  }
  // The kernel's local memory size counts its `local` arguments once they are set (they are,
  // by now): the total per work-group, the kernel's own arrays included. An implementation
  // that left them out would count at least the arguments.
  cl_ulong kernel_local = 0;
  clGetKernelWorkGroupInfo(k, m_device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof kernel_local,
                           &kernel_local, nullptr);
  std::uint64_t asked = 0;
  for (const auto& a : call.args) {
    if (a.what == launch_argument::kind::local) asked += a.size;
  }
  const std::uint64_t total = std::max<std::uint64_t>(kernel_local, asked);
  if (total > local_memory()) {
    throw backend_error(fault_kind::invalid_launch,
                        "the kernel asks for " + std::to_string(total >> 10) +
                            " KiB of local memory per work-group; " + m_info.name + " has " +
                            std::to_string(local_memory() >> 10) + " KiB");
  }
}

void opencl_backend::flush_caches() {
  if (!m_flush) {
    // Allocated when first needed: jobs that time hot caches never pay for its memory. Zeroed
    // once, so that its pages exist before the first flush reads them.
    cl_int status = CL_SUCCESS;
    m_flush.reset(clCreateBuffer(m_context, CL_MEM_READ_WRITE, m_flush_bytes, nullptr, &status));
    if (status == CL_SUCCESS) {
      m_flush_sink.reset(clCreateBuffer(m_context, CL_MEM_READ_WRITE, 8, nullptr, &status));
    }
    if (status != CL_SUCCESS) {
      m_flush.reset();
      fail(status, "allocating the cache flush buffer (" + gib(double(m_flush_bytes)) + ")",
           cl_phase::allocate);
    }
    const cl_ulong zero = 0;
    guard(clEnqueueFillBuffer(m_queue, m_flush.get(), &zero, sizeof zero, 0, m_flush_bytes, 0,
                              nullptr, nullptr),
          "preparing the cache flush", cl_phase::enqueue);
  }
  cl_kernel k = builtin(dtype::f32, "flush_caches");
  arg(k, 0, m_flush.get(), "flush");
  arg(k, 1, cl_long(m_flush_bytes / 8), "flush");
  arg(k, 2, m_flush_sink.get(), "flush");
  const std::size_t local = k_block;
  const std::size_t global = round_up(
      std::min<std::int64_t>(std::int64_t(m_flush_bytes / 8), k_max_groups * k_block), k_block);
  run(k, 1, &global, &local, "flushing the caches");
}

void opencl_backend::scrub_local_memory() {
  const std::uint64_t words = std::min<std::uint64_t>(local_memory() / 4, 1u << 20);
  if (words == 0) return;
  if (!m_flush_sink) {
    cl_int status = CL_SUCCESS;
    m_flush_sink.reset(clCreateBuffer(m_context, CL_MEM_READ_WRITE, 8, nullptr, &status));
    check(status, "allocating the local memory scrub's sink", cl_phase::allocate);
  }
  if (!m_scrub_arrivals) {
    cl_int status = CL_SUCCESS;
    m_scrub_arrivals.reset(clCreateBuffer(m_context, CL_MEM_READ_WRITE, 4, nullptr, &status));
    check(status, "allocating the local memory scrub's counter", cl_phase::allocate);
    const cl_uint zero = 0;
    guard(clEnqueueFillBuffer(m_queue, m_scrub_arrivals.get(), &zero, 4, 0, 4, 0, nullptr, nullptr),
          "clearing the local memory scrub's counter", cl_phase::enqueue);
  }
  // A CPU device runs a work-group on each of its threads (one per compute unit), and each
  // thread's work-groups share one region of local memory: one work-group per thread, which meet
  // before they finish so that none takes a second. A GPU gets two per compute unit, which do
  // not wait for each other (they could not all be resident at once).
  const bool cpu = m_info.type == "cpu";
  const cl_uint units = cl_uint(std::max(1, m_info.compute_units));
  const cl_uint groups = cpu ? units : 2 * units;
  const cl_uint meet = cpu ? groups : 0;
  ++m_scrubs;
  cl_kernel k = builtin(dtype::f32, "scrub_local");
  guard(clSetKernelArg(k, 0, std::size_t(words) * 4, nullptr), "scrub", cl_phase::enqueue);
  arg(k, 1, cl_uint(words), "scrub");
  arg(k, 2, cl_uint(0xa5a5a5a5u ^ m_scrubs), "scrub");
  arg(k, 3, m_flush_sink.get(), "scrub");
  arg(k, 4, m_scrub_arrivals.get(), "scrub");
  arg(k, 5, meet, "scrub");
  arg(k, 6, cl_uint(m_scrubs * meet), "scrub");  // the count after this scrub's arrivals
  const std::size_t local = k_block;
  const std::size_t global = std::size_t(groups) * k_block;
  run(k, 1, &global, &local, "scrubbing local memory");
}

timed_sample opencl_backend::time_launches(kernel_role, const std::function<void()>& enqueue) {
  cl_int status = CL_SUCCESS;
  event_ptr hold(clCreateUserEvent(m_context, &status));
  check(status, "creating the hold event", cl_phase::other);
  cl_event hold_event = hold.get();
  guard(clEnqueueBarrierWithWaitList(m_queue, 1, &hold_event, nullptr), "holding the queue",
        cl_phase::enqueue);
  m_first.reset();
  m_last.reset();
  m_launch_first.reset();
  m_marks.clear();
  m_sampling = true;
  try {
    enqueue();
  } catch (...) {
    m_sampling = false;
    clSetUserEventStatus(hold.get(), CL_COMPLETE);
    throw;
  }
  m_sampling = false;
  check(clSetUserEventStatus(hold.get(), CL_COMPLETE), "releasing the queue", cl_phase::other);
  if (!m_last) return {0, true, {}};
  cl_event last = m_last.get();
  guard(clWaitForEvents(1, &last), "waiting for the kernel", cl_phase::wait);
  cl_int exec = CL_COMPLETE;
  clGetEventInfo(last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec, nullptr);
  if (exec < 0) guard(exec, "running the kernel", cl_phase::wait);
  const auto time_of = [&](cl_event e, cl_profiling_info which) {
    cl_ulong t = 0;
    check(clGetEventProfilingInfo(e, which, sizeof t, &t, nullptr), "reading a command's time",
          cl_phase::other);
    return t;
  };
  const cl_ulong start = time_of(
      m_first.get(), m_first_is_marker ? CL_PROFILING_COMMAND_END : CL_PROFILING_COMMAND_START);
  const cl_ulong end = time_of(last, CL_PROFILING_COMMAND_END);
  timed_sample s{end > start ? double(end - start) / 1e3 : 0.0, true, {}};
  // Each marked launch: from its first command's start to its last's end, where it had a first
  // command of its own (not the queue's wait between commands, which a CPU device's scheduler
  // stretches now and then); else from the end of the launch before (or the sample's start).
  cl_ulong from = start;
  for (const auto& [first, mark] : m_marks) {
    const cl_ulong to = time_of(mark.get(), CL_PROFILING_COMMAND_END);
    if (first) from = time_of(first.get(), CL_PROFILING_COMMAND_START);
    s.launch_us.push_back(to > from ? double(to - from) / 1e3 : 0.0);
    from = std::max(from, to);
  }
  m_first.reset();
  m_last.reset();
  m_launch_first.reset();
  m_marks.clear();
  return s;
}

void opencl_backend::mark_launch() {
  if (!m_sampling || !m_last) return;
  clRetainEvent(m_last.get());
  m_marks.emplace_back(std::move(m_launch_first), event_ptr(m_last.get()));
  m_launch_first.reset();
}

}  // namespace

std::vector<device_info> discover_opencl_devices() {
  std::vector<device_info> out;
  try {
    const auto devices = enumerate_devices();
    for (std::size_t i = 0; i < devices.size(); ++i)
      out.push_back(describe(devices[i], int(i)));
  } catch (const std::exception& e) {
    spdlog::warn("OpenCL devices cannot be listed: {}", e.what());
  }
  if (out.empty()) spdlog::info("no OpenCL device (no ICD loader, platform or device)");
  return out;
}

std::unique_ptr<engine> make_opencl_engine(int index) {
  return make_opencl_engine(index, true);
}

std::unique_ptr<engine> make_opencl_engine(int index, bool defences) {
  return std::make_unique<point_runner>(std::make_unique<opencl_backend>(index), defences);
}

}  // namespace kernelscan

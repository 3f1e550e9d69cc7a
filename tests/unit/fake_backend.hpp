#pragma once
// A device backend for the point runner's unit tests: buffers in host memory, the built-in ops
// computed on the host, user kernels as host functions registered by entry name, a simulated
// clock whose launches take the time a test gives them, and a log of every call so that tests
// can check the order of what the runner did. Faults are injected by name of the call.

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/device_backend.hpp"
#include "engine/element.hpp"
#include "engine/fill_pattern.hpp"
#include "engine/gemm_layout.hpp"

namespace kernelscan::testing {

class fake_backend final : public device_backend {
 public:
  // A user kernel on the host: the launch's arguments, with buffers as host pointers.
  struct host_args {
    std::vector<void*> buffers;                // buffer arguments, in order
    std::vector<double> scalars;               // scalar arguments, in order, as doubles
    const std::vector<launch_argument>* args;  // as launched
  };
  using host_kernel = std::function<void(const host_args&)>;

  fake_backend() {
    m_info.index = 0;
    m_info.engine = engine_kind::hip;
    m_info.type = "gpu";
    m_info.vendor = "Test";
    m_info.name = "fake device";
    m_info.arch = "fake";
    m_info.compute_units = 4;
    m_info.memory_bytes = 1ull << 30;
    m_info.l2_bytes = 1 << 20;
    m_info.driver = "fake driver";
  }

  // --- what tests set
  std::map<std::string, host_kernel> kernels;    // by entry name
  std::map<std::string, double> kernel_time_us;  // device time per launch, by entry name
  double gemm_tflops = 10;                       // for built-in GEMMs (all dtypes)
  double bandwidth_gbps = 100;                   // for STREAM ops
  double fma_tflops = 5;
  double launch_overhead_us = 2;                 // added to every timed launch
  std::map<std::string, fault_kind> fail_on;     // call name -> the fault it throws
  std::map<std::string, fault_kind> fail_entry;  // kernel entry -> the fault its launches throw
  int compiles = 0;                              // calls of compile()
  bool throttled = false;
  // When set: the first launch of each timed sample takes this long, and the rest what
  // kernel_time_us says (a kernel that works once per batch).
  double time_first_launch_only_us = 0;
  // A host kernel that sets launch_skipped did no work: its launch takes skipped_launch_us.
  bool launch_skipped = false;
  double skipped_launch_us = 0.01;
  // A host kernel that sets launch_work did that many launches' work: its launch takes that many
  // times its time.
  double launch_work = 1;
  bool fp64 = true;  // f64 GEMMs supported
  std::uint64_t free_bytes = 1ull << 30;
  // False: buffers have no storage and ops only take their time (the roofline's big problems).
  bool backing = true;
  // True: outputs are screened "on the device" (screen_outputs, here on the host, logged as
  // "screen OUT REF"); false: the runner compares them on the host, as with a backend without it.
  bool screens = false;
  // Called when a module is loaded afresh: a kernel's state kept here stands for its module's
  // globals, which a fresh module starts without.
  std::function<void()> on_fresh_module;

  // --- what tests read
  std::vector<std::string> log;
  // By buffer handle: what the last read from its start handed the host, and what its words
  // held before the last xor_keystream.
  std::map<std::uintptr_t, std::vector<unsigned char>> first_read, plain_before_xor;
  std::size_t live_buffers() const { return m_memory.size(); }
  std::size_t launches = 0;  // of user kernels
  // Each timed sample: its role, the user kernels' launches it held, and how long its enqueueing
  // took the host (µs, real time: what holds a device's queue before the sample's first launch).
  struct timed_call {
    kernel_role role;
    std::size_t launches;
    double enqueue_us;
  };
  std::vector<timed_call> samples;

  const device_info& device() const override { return m_info; }
  device_info& info() { return m_info; }
  double launch_latency_us() const override { return 3; }
  std::string gemm_library() const override { return "fake BLAS"; }
  bool supports_gemm(gemm_algorithm, dtype t) const override { return t != dtype::f64 || fp64; }

  void begin_point(const point_context&) override { log.push_back("begin_point"); }
  bool usable() const override { return !m_lost; }

  // What is left of free_bytes after the live buffers, as a device reports it.
  std::uint64_t free_memory() override {
    return free_bytes > m_allocated ? free_bytes - m_allocated : 0;
  }
  std::uint64_t max_allocation() const override { return m_info.memory_bytes; }
  // A guarded buffer is one host allocation of guard + bytes + guard, its data in the middle: a
  // host kernel that writes at y[-1] lands in the leading guard, as on a device.
  device_buffer allocate_guarded(std::uint64_t bytes, std::uint64_t guard) override {
    maybe_fail("allocate");
    if (bytes == 0) guard = 0;
    const std::uintptr_t h = m_next++;
    const std::uint64_t whole = guard + bytes + guard;
    m_memory[h].assign(backing ? whole : 0, 0xcd);
    m_sizes[h] = whole;
    m_allocated += whole;
    log.push_back("allocate " + std::to_string(h));
    return device_buffer(this, h, bytes, guard, h);
  }
  void fill(const device_buffer& b, const fill_request& f) override {
    if (backing) fill_host(f, data(b));
    log.push_back("fill " + std::to_string(b.handle()) + " " + kind_name(f.kind));
  }
  void write(const device_buffer& b, std::uint64_t offset, const void* src,
             std::uint64_t bytes) override {
    std::memcpy(data(b) + offset, src, bytes);
    log.push_back("write " + std::to_string(b.handle()));
  }
  void read(const device_buffer& b, std::uint64_t offset, void* dst, std::uint64_t bytes) override {
    maybe_fail("read");
    std::memcpy(dst, data(b) + offset, bytes);
    if (m_unlogged) return;
    log.push_back("read " + std::to_string(b.handle()));
    if (offset == 0) first_read[b.handle()].assign(data(b), data(b) + bytes);
  }
  // Logged as one "hash" entry, not as the reads the base class hashes by.
  std::uint64_t hash(const device_buffer& b, std::uint64_t bytes) override {
    log.push_back("hash " + std::to_string(b.handle()));
    const unlogged_reads quiet(m_unlogged);
    return device_backend::hash(b, bytes);
  }
  // Logged as one "xor_keystream" entry; the words before it kept in `plain_before_xor`.
  void xor_keystream(const device_buffer& b, std::uint64_t words, const device_buffer& pad,
                     std::uint64_t pad_words, const device_buffer& periods) override {
    log.push_back("xor_keystream " + std::to_string(b.handle()));
    if (!backing) return;
    plain_before_xor[b.handle()].assign(data(b), data(b) + words * 8);
    const unlogged_reads quiet(m_unlogged);
    device_backend::xor_keystream(b, words, pad, pad_words, periods);
  }
  std::optional<output_screen> screen_outputs(const device_buffer& out, const device_buffer& ref,
                                              dtype t, std::int64_t n, double atol,
                                              double rtol) override {
    if (!screens || !is_floating(t)) return std::nullopt;
    output_screen found;
    if (n <= 0) return found;
    log.push_back("screen " + std::to_string(out.handle()) + " " + std::to_string(ref.handle()));
    const std::size_t w = size_of(t);
    for (std::int64_t i = 0; i < n; ++i) {
      const double o = load_element(t, data(out) + std::size_t(i) * w);
      const double r = load_element(t, data(ref) + std::size_t(i) * w);
      const double d = std::fabs(o - r);
      if (std::isfinite(o) && std::isfinite(r) && d <= atol + rtol * std::fabs(r)) {
        found.sum_sq_diff += d * d;
        found.sum_sq_ref += r * r;
      } else {
        ++found.irregular;
      }
    }
    return found;
  }
  void copy(const device_buffer& dst, const device_buffer& src, std::uint64_t bytes) override {
    std::memcpy(data(dst), data(src), bytes);
    log.push_back("copy " + std::to_string(src.handle()) + " " + std::to_string(dst.handle()));
  }
  // Unbacked buffers have no storage: their guards are neither written nor read.
  void write_guard(const device_buffer& b, guard_side side, const void* src) override {
    if (backing) std::memcpy(guard_data(b, side), src, b.guard());
  }
  void read_guard(const device_buffer& b, guard_side side, void* dst) override {
    maybe_fail("read");
    if (backing) std::memcpy(dst, guard_data(b, side), b.guard());
    log.push_back("read_guard " + std::to_string(b.handle()));
  }

  kernel_id compile(const custom_kernel& k) override {
    ++compiles;
    maybe_fail("compile");
    if (!kernels.count(k.entry)) throw compile_error("no kernel named " + k.entry);
    m_compiled.push_back(k.entry);
    return m_compiled.size() - 1;
  }
  kernel_id compile_fresh(const custom_kernel& k) override {
    log.push_back("compile_fresh " + k.entry);
    if (on_fresh_module) on_fresh_module();
    return compile(k);
  }
  void launch(const kernel_call& call) override {
    const std::string& entry = m_compiled.at(call.function);
    maybe_fail("launch");
    if (const auto f = fail_entry.find(entry); f != fail_entry.end())
      throw backend_error(f->second, "launch " + entry + " failed (injected)");
    host_args a;
    std::vector<launch_argument> copy(call.args.begin(), call.args.end());
    a.args = &copy;
    for (std::size_t i = 0; i < call.args.size(); ++i) {
      const auto& arg = call.args[i];
      if (arg.what == launch_argument::kind::buffer) a.buffers.push_back(data(*arg.buffer));
      if (arg.what == launch_argument::kind::scalar) {
        a.scalars.push_back(load_element(call.kernel->args[i].type, arg.value.data()));
      }
    }
    launch_skipped = false;
    launch_work = 1;
    ++launches;
    kernels.at(entry)(a);
    double us = (kernel_time_us.count(entry) ? kernel_time_us[entry] : 10) * launch_work;
    if (launch_skipped) us = skipped_launch_us;
    if (time_first_launch_only_us > 0 && m_timing && m_pending == 0) us = time_first_launch_only_us;
    launched("launch " + entry, us);
  }
  void gemm(const gemm_call& c) override {
    maybe_fail("gemm");
    const auto& g = *c.gemm;
    if (g.type == dtype::f64 && !fp64) throw backend_error(fault_kind::unsupported, "no f64");
    const gemm_strides st = strides_of(g.m, g.n, g.k, g.layout_a, g.layout_b);
    const std::size_t w = size_of(g.type);
    const unsigned char* a = data(*c.a);
    const unsigned char* b = data(*c.b);
    unsigned char* out = data(*c.c);
    if (backing && (c.algorithm != gemm_algorithm::builtin || !skip_builtin_gemm)) {
      for (std::int64_t i = 0; i < g.m; ++i) {
        for (std::int64_t j = 0; j < g.n; ++j) {
          double sum = 0;
          for (std::int64_t p = 0; p < g.k; ++p) {
            sum += load_element(g.type, a + std::size_t(i * st.a_row + p * st.a_col) * w) *
                   load_element(g.type, b + std::size_t(p * st.b_row + j * st.b_col) * w);
          }
          double v = g.alpha * sum;
          unsigned char* cp = out + std::size_t(i * g.n + j) * w;
          if (g.beta != 0) v += g.beta * load_element(g.type, cp);
          store_element(g.type, v, cp);
        }
      }
    }
    const char* what = c.algorithm == gemm_algorithm::reference ? "gemm reference"
                       : c.algorithm == gemm_algorithm::library ? "gemm library"
                                                                : "gemm builtin";
    launched(what, 2.0 * double(g.m) * double(g.n) * double(g.k) / (gemm_tflops * 1e6));
  }
  void stream(const stream_call& c) override {
    maybe_fail("stream");
    const auto& s = *c.stream;
    for (std::int64_t i = 0; backing && i < s.n; ++i) {
      auto at = [&](const device_buffer* b) { return data(*b) + std::size_t(i) * size_of(s.type); };
      auto get = [&](const device_buffer* b) { return load_element(s.type, at(b)); };
      switch (s.variant) {
        case stream_variant::copy:
          store_element(s.type, get(c.a), at(c.c));
          break;
        case stream_variant::scale:
          store_element(s.type, s.scalar * get(c.c), at(c.b));
          break;
        case stream_variant::add:
          store_element(s.type, get(c.a) + get(c.b), at(c.c));
          break;
        case stream_variant::triad:
          store_element(s.type, get(c.b) + s.scalar * get(c.c), at(c.a));
          break;
      }
    }
    launched(c.reference ? "stream reference" : "stream",
             double(s.n) * 3 * double(size_of(s.type)) / (bandwidth_gbps * 1e3));
  }
  void fma(const device_buffer&, std::int64_t threads, int iterations) override {
    launched("fma", double(threads) * iterations * 16 / (fma_tflops * 1e6));
  }
  void synchronize() override {
    maybe_fail("synchronize");
    log.push_back("synchronize");
  }

  void flush_caches() override { log.push_back("flush"); }
  void scrub_local_memory() override { log.push_back("scrub"); }
  timed_sample time_launches(kernel_role role, const std::function<void()>& enqueue) override {
    log.push_back(role == kernel_role::candidate ? "sample candidate" : "sample baseline");
    m_pending = 0;
    m_marks.clear();
    m_timing = true;
    const std::size_t launches_before = launches;
    const auto began = std::chrono::steady_clock::now();
    enqueue();
    samples.push_back(
        {role, launches - launches_before,
         std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - began)
             .count()});
    m_timing = false;
    m_clock_us += m_pending + sample_fixed_us + 5;
    timed_sample s{m_pending + sample_fixed_us, true, {}};
    // The fixed cost is the first launch's, as where the events around a sample take it.
    double from = -sample_fixed_us;
    for (const double mark : m_marks) {
      s.launch_us.push_back(mark - from);
      from = mark;
    }
    return s;
  }
  // Marks are not logged: like OpenCL's, they are invisible to the kernels. Where they are not
  // free, each takes mark_us of the sample's time.
  void mark_launch() override {
    if (!m_timing) return;
    if (!free_marks) m_pending += mark_us;
    m_marks.push_back(m_pending);
  }
  bool marks_are_free() const override { return free_marks; }
  double clock_ms() override { return m_clock_us / 1e3; }
  std::optional<telemetry_reading> read_telemetry() override {
    telemetry_reading r;
    r.sm_clock_mhz = throttled ? 500 : 2000;
    r.max_sm_clock_mhz = 2000;
    return r;
  }

  bool skip_builtin_gemm = false;  // the builtin GEMM writes nothing (a wrong kernel)
  // The fixed cost of a timed sample (µs): what the events around its launches take.
  double sample_fixed_us = 0;
  bool free_marks = true;  // marks_are_free()
  double mark_us = 0;      // what a mark takes where they are not free

 private:
  static std::string kind_name(fill_kind k) {
    switch (k) {
      case fill_kind::random:
        return "random";
      case fill_kind::value:
        return "value";
      case fill_kind::arange:
        return "arange";
      case fill_kind::unwritten:
        return "unwritten";
    }
    return "?";
  }
  void maybe_fail(const std::string& call) {
    auto it = fail_on.find(call);
    if (it == fail_on.end()) return;
    if (it->second == fault_kind::device_lost) m_lost = true;
    throw backend_error(it->second, call + " failed (injected)");
  }
  void launched(const std::string& what, double us) {
    log.push_back(what);
    if (m_timing) m_pending += us + launch_overhead_us;
  }
  // While one lives, reads are not logged (the base class's hash and masking read through
  // read()).
  struct unlogged_reads {
    bool& flag;
    explicit unlogged_reads(bool& f) : flag(f) { flag = true; }
    ~unlogged_reads() { flag = false; }
    unlogged_reads(const unlogged_reads&) = delete;
    unlogged_reads& operator=(const unlogged_reads&) = delete;
  };
  // The first data byte of `b` (past its leading guard).
  unsigned char* data(const device_buffer& b) {
    auto& m = m_memory.at(b.handle());
    return m.empty() ? m.data() : m.data() + b.guard();
  }
  unsigned char* guard_data(const device_buffer& b, guard_side side) {
    return m_memory.at(b.handle()).data() +
           (side == guard_side::before ? 0 : b.guard() + b.bytes());
  }
  void release(const device_buffer& b) noexcept override {
    const std::uintptr_t handle = b.handle();
    m_memory.erase(handle);
    m_allocated -= m_sizes[handle];
    m_sizes.erase(handle);
    log.push_back("release " + std::to_string(handle));
  }

  device_info m_info;
  std::map<std::uintptr_t, std::vector<unsigned char>> m_memory;
  bool m_unlogged = false;  // inside hash() or xor_keystream(): their reads are not logged
  std::map<std::uintptr_t, std::uint64_t> m_sizes;
  std::uint64_t m_allocated = 0;
  std::uintptr_t m_next = 1;
  std::vector<std::string> m_compiled;
  bool m_lost = false;
  bool m_timing = false;
  double m_pending = 0;
  std::vector<double> m_marks;  // m_pending at each mark of the sample being timed
  double m_clock_us = 0;
};

}  // namespace kernelscan::testing

#pragma once
// The device-backend interface (DESIGN.md §1, after Kernel Tuner's kernel_tuner/backends/): what
// the point runner asks of a platform, and nothing that judges a kernel. A backend allocates,
// fills and copies buffers, compiles user kernels, enqueues launches (its own ops and user
// kernels), takes one timed sample of launches, flushes the caches and reads telemetry.
// Everything that decides whether a kernel is correct or how fast it is belongs to the runner
// (point_runner.hpp), written once.
//
// Backends: engine/hip/ (HIP, and CUDA through engine/hip/runtime.hpp), engine/opencl/, and the
// mock (mock_engine.hpp), which simulates timings from a roofline model and runs no device code.
//
// This header is standard C++ only: hipcc and nvcc compile it too.
//
// Threading: a backend is used by one thread (the worker's). Work is enqueued in order on the
// backend's one queue (stream); reads, synchronize() and time_launches() wait for it.
// Units: bytes, microseconds; clock_ms() in milliseconds.

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/device_info.hpp"
#include "engine/fill_pattern.hpp"
#include "engine/hip/telemetry.hpp"
#include "engine/kernel_instance.hpp"
#include "engine/point_result.hpp"

namespace kernelscan {

// What went wrong in a backend call, as the runner reports it.
enum class fault_kind {
  device_lost,     // the context is unusable (illegal address, trap): the worker is replaced
  out_of_memory,   // an allocation failed
  invalid_launch,  // the device refuses the launch: block too large, too much shared memory
  unsupported,     // the device or this build cannot do it (a dtype, a GEMM library, a language)
  internal,        // anything else the platform reported
};

class backend_error : public std::runtime_error {
 public:
  backend_error(fault_kind kind, const std::string& what)
      : std::runtime_error(what), m_kind(kind) {}
  fault_kind kind() const { return m_kind; }

 private:
  fault_kind m_kind;
};

// A user kernel did not compile, or has no such entry; what() carries the compiler's log.
class compile_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A compiler's log as a compile_error carries it: valid UTF-8 (a byte that is not is written
// "<FF>", as clang writes one), and at most its first k_compile_log_bytes, cut at a line's end,
// with a last line that says how much was left out. Some drivers do not stop after clang's 20
// errors (PoCL's log of a 250 KiB source ran to 2 MiB), and every point of a sweep stores its
// compile error.
inline constexpr std::size_t k_compile_log_bytes = 16 * 1024;
std::string bounded_compile_log(std::string_view log);

// Throws the exception being handled again (from inside a catch), a backend_error, a
// compile_error or an std::invalid_argument with its message led by "`whose`: " (the spec field
// whose kernel threw it, such as "fitness.baseline"); anything else as it is.
[[noreturn]] void rethrow_for(const std::string& whose);

class device_backend;

// Device memory owned through its backend; moves, never copies. The handle is the platform's
// (a device pointer, a cl_mem) as an integer; the mock's is a counter.
//
// A guarded buffer (device_backend::allocate_guarded) is one allocation of guard + bytes + guard:
// its handle addresses the `bytes` of data only, as a plain buffer's does, and base() is the
// platform's handle of the whole allocation (the parent cl_mem of a sub-buffer, the pointer
// hipMalloc returned). A plain buffer has guard() 0 and base() == handle().
class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(device_backend* owner, std::uintptr_t handle, std::uint64_t bytes)
      : m_owner(owner), m_handle(handle), m_base(handle), m_bytes(bytes) {}
  device_buffer(device_backend* owner, std::uintptr_t handle, std::uint64_t bytes,
                std::uint64_t guard, std::uintptr_t base)
      : m_owner(owner), m_handle(handle), m_base(base), m_bytes(bytes), m_guard(guard) {}
  device_buffer(device_buffer&& o) noexcept
      : m_owner(std::exchange(o.m_owner, nullptr)),
        m_handle(std::exchange(o.m_handle, 0)),
        m_base(std::exchange(o.m_base, 0)),
        m_bytes(std::exchange(o.m_bytes, 0)),
        m_guard(std::exchange(o.m_guard, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    std::swap(m_owner, o.m_owner);
    std::swap(m_handle, o.m_handle);
    std::swap(m_base, o.m_base);
    std::swap(m_bytes, o.m_bytes);
    std::swap(m_guard, o.m_guard);
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  inline ~device_buffer();

  std::uintptr_t handle() const { return m_handle; }
  std::uint64_t bytes() const { return m_bytes; }
  // Bytes of each guard region, before and after the data; 0 for a plain buffer.
  std::uint64_t guard() const { return m_guard; }
  std::uintptr_t base() const { return m_base; }
  explicit operator bool() const { return m_owner != nullptr; }

 private:
  device_backend* m_owner = nullptr;
  std::uintptr_t m_handle = 0;
  std::uintptr_t m_base = 0;
  std::uint64_t m_bytes = 0;
  std::uint64_t m_guard = 0;
};

// The guard region of a guarded buffer before its first byte, or after its last.
enum class guard_side { before, after };

// One guard region of a guarded buffer.
struct guard_ref {
  const device_buffer* buffer;
  guard_side side;
};

// The first `bytes` of a buffer, to hash in a batch (device_backend::hash_all).
struct hash_ref {
  const device_buffer* buffer;
  std::uint64_t bytes;
};

// One buffer's fill in a batch of them (device_backend::fill_all).
struct fill_target {
  const device_buffer* buffer;
  fill_request request;
};

// fill_all()'s targets as a backend that fills several buffers in one command takes them: random
// fills by type and length, constant and unwritten ones whose bytes are whole 64-bit words by
// length and `word` (the element's bytes repeated over it), each group in runs of at most `most`
// members; the others (aranges, lengths of part of a word, a group of one) in `single`.
// Fills of no elements are left out.
struct fill_group {
  bool random = false;
  dtype type = dtype::f32;  // random
  std::int64_t count = 0;   // elements (random) or words
  std::uint64_t word = 0;   // constant and unwritten
  std::vector<const fill_target*> members;
};
struct grouped_fills {
  std::vector<fill_group> groups;
  std::vector<const fill_target*> single;
};
grouped_fills group_fills(std::span<const fill_target> fills, std::size_t most);

// Which algorithm a GEMM launch runs.
enum class gemm_algorithm {
  library,    // the vendor library (cuBLAS, hipBLAS, CLBlast)
  builtin,    // the backend's own tiled kernel
  reference,  // one thread per output, accumulating in f64: the answer others are checked against
};

// C (m×n, row-major) = alpha·op(A)·op(B) + beta·C; A and B laid out as `gemm` says.
struct gemm_call {
  const gemm_instance* gemm = nullptr;
  gemm_algorithm algorithm = gemm_algorithm::builtin;
  const device_buffer* a = nullptr;
  const device_buffer* b = nullptr;
  const device_buffer* c = nullptr;
};

// A STREAM op over n elements (kernel_spec.hpp), or its independently written reference (f64
// arithmetic, one element per thread). Arrays the variant does not use may be null.
struct stream_call {
  const stream_instance* stream = nullptr;
  bool reference = false;
  const device_buffer* a = nullptr;
  const device_buffer* b = nullptr;
  const device_buffer* c = nullptr;
};

// One argument of a user kernel's launch, in the kernel's parameter order.
struct launch_argument {
  enum class kind { buffer, scalar, local };
  kind what = kind::scalar;
  const device_buffer* buffer = nullptr;  // buffer
  std::array<unsigned char, 8> value{};   // scalar: its bytes as the device stores the type
  std::uint64_t size = 0;                 // scalar: bytes of value; local: bytes to reserve
};

// A compiled user kernel, as the backend that compiled it numbers them. Valid until the
// backend's next begin_point().
using kernel_id = std::uint64_t;

// A launch of a compiled user kernel: global size grid × block, work-group (block) size block.
struct kernel_call {
  const custom_instance* kernel = nullptr;  // what the launch is of (the mock models its time)
  const custom_launch* launch = nullptr;    // dimensions and dynamic shared memory
  kernel_id function = 0;
  std::span<const launch_argument> args;
};

// What one timed sample measured.
struct timed_sample {
  double time_us = 0;  // device time from the start of the first launch to the end of the last
  bool valid = true;   // false: the host could not queue the launches before the hold gave up
  // Where the sample was timed launch by launch (device_backend::mark_launch after each): the
  // device time of each, from the sample's start or the mark before to its own mark. Empty
  // where it was not, or the backend cannot tell its launches apart.
  std::vector<double> launch_us;
};

// Whose launches a sample times; the mock applies mock.speedup to the candidate's only.
enum class kernel_role { candidate, baseline };

// A point as the runner starts it: which, with what seed, and the mock's test options.
struct point_context {
  std::uint64_t index = 0;
  std::uint64_t seed = 0;
  const mock_options* mock = nullptr;
};

// What screening a kernel's outputs against the reference's on the device found
// (device_backend::screen_outputs).
struct output_screen {
  std::uint64_t irregular = 0;  // elements that do not pass as a block of compare_outputs judges
  double sum_sq_diff = 0;       // Σ(out − ref)² and Σref², for the norm test
  double sum_sq_ref = 0;
};

class device_backend {
 public:
  virtual ~device_backend() = default;

  virtual const device_info& device() const = 0;
  // The launch overhead below which a kernel's time is latency, for the analysis (µs).
  virtual double launch_latency_us() const = 0;
  // The name and version of the GEMM library, or "" when the backend has none.
  virtual std::string gemm_library() const = 0;
  // False when a GEMM of `t` cannot run with `algorithm` on this device.
  virtual bool supports_gemm(gemm_algorithm algorithm, dtype t) const = 0;

  // --- points
  // Called before each point; the backend may drop cached kernels (kernel ids die here).
  virtual void begin_point(const point_context& point) = 0;
  // False once the device cannot be used in this process (it faulted): the worker is replaced.
  virtual bool usable() const = 0;
  // False for a backend that runs no device code (the mock): verification is then simulated.
  virtual bool runs_device_code() const { return true; }
  // What verifying `k` would report, on a backend that runs no device code.
  virtual verification_result simulate_verification(const job_spec& spec, const kernel_instance& k);

  // --- memory
  // Bytes that may still be allocated, and the largest single allocation.
  virtual std::uint64_t free_memory() = 0;
  virtual std::uint64_t max_allocation() const = 0;
  // One allocation of guard + bytes + guard (or more, where the platform must align the data),
  // of which the buffer returned addresses the `bytes` in the middle: offset 0 is the first data
  // byte, and fill, read, write, copy, kernel arguments and the built-in ops take it as a plain
  // buffer of `bytes`. The guards are reached through write_guard() and read_guard() only, so
  // that what changes there was written outside the buffer (the runner's canaries). Releasing
  // the buffer frees the whole allocation. A buffer of 0 bytes has no storage and no guards.
  // Throws backend_error (out_of_memory) when the device cannot allocate it.
  virtual device_buffer allocate_guarded(std::uint64_t bytes, std::uint64_t guard) = 0;
  // A plain buffer: no guards.
  device_buffer allocate(std::uint64_t bytes) { return allocate_guarded(bytes, 0); }
  // Copies b.guard() bytes from `src` into the guard region on `side` of `b` / from it to `dst`
  // (waiting for queued work first, as read() does). Nothing for a plain buffer.
  virtual void write_guard(const device_buffer& b, guard_side side, const void* src) = 0;
  virtual void read_guard(const device_buffer& b, guard_side side, void* dst) = 0;
  // The runner's canaries, in one batch: `canary` written into every guard listed, and whether
  // each still holds it. Every listed buffer has guards of the same size, the canary's (or none:
  // nothing to write, and it holds). A backend that can queue copies waits for the device once
  // for the whole batch (a point checks a dozen 64 KiB guards several times, each copy a wait of
  // tens of microseconds on a GPU); the defaults call write_guard() and read_guard() for each.
  virtual void write_guards(std::span<const guard_ref> guards, const void* canary);
  virtual std::vector<bool> guards_hold(std::span<const guard_ref> guards, const void* canary);
  virtual void fill(const device_buffer& b, const fill_request& f) = 0;
  // Each target filled as fill() fills it, enqueued in any order (each buffer appears once). A
  // batched sample refreshes a set of buffers per launch, hundreds of fills of kilobytes each: a
  // backend may fill several buffers in one command where each command costs more than the
  // filling (on PoCL about 5 µs). The default calls fill() for each.
  virtual void fill_all(std::span<const fill_target> fills);
  virtual void write(const device_buffer& b, std::uint64_t offset, const void* src,
                     std::uint64_t bytes) = 0;
  // Waits for queued work, then copies.
  virtual void read(const device_buffer& b, std::uint64_t offset, void* dst,
                    std::uint64_t bytes) = 0;
  virtual void copy(const device_buffer& dst, const device_buffer& src, std::uint64_t bytes) = 0;
  // A hash of the first `bytes` of `b` (waiting for queued work first): equal for equal bytes,
  // and different wherever one 64-bit word of them differs (each step of it is a bijection).
  // Only compared with another hash of the same buffer by the same backend, so a backend may
  // compute it its own way: on the device, where reading the buffer back would cost more. The
  // default reads it back and hashes it on the host.
  virtual std::uint64_t hash(const device_buffer& b, std::uint64_t bytes);
  // hash() of each of `refs`, in order. The default hashes them one after another; a backend
  // that hashes on the device queues them all and reads their results back once, where each
  // read of its own would wait for the device.
  virtual std::vector<std::uint64_t> hash_all(std::span<const hash_ref> refs);
  // XORs the first `words` 64-bit words of `b` with a keystream (enqueued): word j with
  // pad[j % pad_words] ^ periods[j / pad_words], where `pad` holds `pad_words` words (a power of
  // two) and `periods` a word per period of the pad (answer_mask.hpp). The point runner masks the
  // reference's answer so before reading it back: the host never holds it in the clear, and the
  // read needs no pass of its own over it. The default reads the words back, XORs them on the
  // host and writes them (a backend that runs no device code of its own).
  virtual void xor_keystream(const device_buffer& b, std::uint64_t words, const device_buffer& pad,
                             std::uint64_t pad_words, const device_buffer& periods);

  // The first `n` elements of type `t` of `out` against those of `ref` (both as the device
  // stores them), compared on the device as compare_outputs compares a block in its vectorised
  // pass (output_check.hpp): the elements that do not pass there (a value not finite on either
  // side, NaN included, an integer holding either unwritten pattern on either side, or a
  // difference beyond atol + rtol·|ref|), and the sums of the norm test, over the elements that
  // do pass; only these few numbers come back. Where none is irregular and the norm test passes,
  // comparing on the host would pass as well; anything else the host decides, with the outputs
  // read back. nullopt where the backend cannot (no f64 arithmetic on the device, or no device
  // code of its own, the default): the caller compares on the host. With `n` 0 it only answers
  // whether it can.
  // A screen of this many elements launches as one of any more does (its widest grid), so that
  // screening as many warms the device's kernel for every later screen.
  static constexpr std::int64_t k_screen_widest = 65536;
  virtual std::optional<output_screen> screen_outputs(const device_buffer& out,
                                                      const device_buffer& ref, dtype t,
                                                      std::int64_t n, double atol, double rtol) {
    (void)out, (void)ref, (void)t, (void)n, (void)atol, (void)rtol;
    return std::nullopt;
  }

  // --- kernels (enqueued; errors of the launch itself are thrown, errors of the kernel's run
  // surface at the next wait)
  // Compiles (or finds in the backend's cache) a user kernel for this device; throws
  // compile_error with the log, or backend_error (unsupported) for a language it cannot run.
  virtual kernel_id compile(const custom_kernel& kernel) = 0;
  // compile(), except that a kernel this backend failed to compile fails again at once with the
  // same compile_error: the points of a sweep share a source, so a mistake in it is compiled once
  // (a compile takes from a tenth of a second to seconds) whichever points report it.
  kernel_id compile_or_recall_failure(const custom_kernel& kernel);
  // As compile(), but loaded as a module (program) of its own that no launch has touched yet:
  // its global variables hold their initial values. Used after verification, so that timed
  // launches see none of the state verification launches left in the kernel's globals. A
  // backend that runs no device code has no such state: compile() is enough.
  virtual kernel_id compile_fresh(const custom_kernel& kernel) { return compile(kernel); }
  virtual void launch(const kernel_call& call) = 0;
  // What compiling `function` gave it (registers, shared and local memory) and its occupancy at
  // `launch`'s block size; nullopt where the platform says nothing. Asked after the kernel ran
  // with the point's arguments: OpenCL counts a `local` argument's memory once it is set.
  virtual std::optional<kernel_resources> resources(kernel_id /*function*/,
                                                    const custom_launch& /*launch*/) {
    return std::nullopt;
  }
  virtual void gemm(const gemm_call& call) = 0;
  virtual void stream(const stream_call& call) = 0;
  // `threads` work-items (a multiple of 256), each running 8 independent FMA chains for
  // `iterations` steps: 16 FLOP per iteration per work-item; `out` holds `threads` f32.
  virtual void fma(const device_buffer& out, std::int64_t threads, int iterations) = 0;
  virtual void synchronize() = 0;

  // --- timing
  // Evicts what earlier work left in the caches (untimed; enqueued before a cold sample).
  virtual void flush_caches() = 0;
  // Overwrites the work-group local (shared) memory of every compute unit with a pattern
  // (untimed; enqueued before the candidate's launches), so that no launch reads what an earlier
  // one - the reference's, its own verification's, another variant's - left there. A no-op where
  // there is none.
  virtual void scrub_local_memory() {}
  // One sample: `enqueue` queues the launches to time; they run back to back behind a hold of
  // the queue where the platform has one, so that the host's launch rate is not timed.
  virtual timed_sample time_launches(kernel_role role, const std::function<void()>& enqueue) = 0;
  // Within time_launches()' `enqueue`, after a launch: what was queued since the sample began or
  // the last mark is one launch, whose time the sample reports (timed_sample::launch_us). A
  // no-op where the backend cannot time launches one by one.
  virtual void mark_launch() {}
  // Whether marks leave a sample's time as it would be without them: the device times every
  // command anyway (OpenCL's profiling). Otherwise a mark is a command of its own (an event
  // recorded between two launches), and a sample with marks is timed a little slower.
  virtual bool marks_are_free() const { return false; }
  // The clock the sampling budget is spent on: wall time, or the mock's simulated clock.
  virtual double clock_ms();
  // The device's clocks now, where the platform reports them.
  virtual std::optional<telemetry_reading> read_telemetry();

 protected:
  // Bytes of all the guards listed, and whether each holds `canary`, `copies` holding their bytes
  // one after another (a guard of a plain buffer has none, and holds): guards_hold() for a
  // backend that copied them all back in one batch.
  static std::uint64_t guard_bytes(std::span<const guard_ref> guards);
  static std::vector<bool> guards_match(std::span<const guard_ref> guards,
                                        const unsigned char* copies, const void* canary);
  // The most threads a device kernel hashing a buffer's words runs.
  static constexpr std::int64_t k_word_hash_threads = 65536;
  // The threads such a kernel runs over `items` words (or elements), each taking `run` of them
  // at least where there are that many: a multiple of 256, at most k_word_hash_threads.
  static std::int64_t word_threads(std::int64_t items, std::int64_t run) {
    return (std::min((items + run - 1) / run, k_word_hash_threads) + 255) / 256 * 256;
  }
  // hash_all() for a backend that hashes words on the device: for each job, `word_hashes` runs
  // `threads` threads (a multiple of 256, at most k_word_hash_threads), thread i folding words i,
  // i + threads, ... of the first `words` 64-bit words of `buffer` with one FNV-style step each,
  // and returns their hashes in thread order (or fewer words that mix them, folded on the
  // device), a list for each job in order; those, a ref's bytes and its bytes past the last whole
  // word (read back) make its hash. Refs with no whole word make no job. A job's threads take
  // `words_per_thread` words each at least, where the buffer has that many.
  struct word_job {
    const device_buffer* buffer;
    std::int64_t words;
    std::int64_t threads;
  };
  std::vector<std::uint64_t> hash_by_words(
      std::span<const hash_ref> refs,
      const std::function<std::vector<std::vector<std::uint64_t>>(std::span<const word_job>)>&
          word_hashes,
      std::int64_t words_per_thread = 1);

 private:
  static constexpr std::size_t k_remembered_failures = 64;
  std::map<std::string, std::string> m_compile_failures;  // kernel key -> its compile_error

  friend class device_buffer;
  // Frees the whole allocation of `b` (its guards too).
  virtual void release(const device_buffer& b) noexcept = 0;
};

inline device_buffer::~device_buffer() {
  if (m_owner) m_owner->release(*this);
}

}  // namespace kernelscan

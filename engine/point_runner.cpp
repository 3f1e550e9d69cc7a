#include "engine/point_runner.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/answer_mask.hpp"
#include "engine/device_catalog.hpp"
#include "engine/entropy.hpp"
#include "engine/fault_phase.hpp"
#include "engine/fill_pattern.hpp"
#include "engine/fitness.hpp"
#include "engine/host_tasks.hpp"
#include "engine/job_plan.hpp"
#include "engine/language_support.hpp"
#include "engine/output_check.hpp"
#include "engine/point_kernel.hpp"
#include "engine/roofline_benchmark.hpp"
#include "engine/sample_loop.hpp"
#include "engine/text_list.hpp"
#include "engine/timed_checks.hpp"

namespace kernelscan {

using point_runner_parts::buffer_bytes;
using point_runner_parts::format_tolerance;
using point_runner_parts::k_max_drawn_checks;
using point_runner_parts::k_memory_headroom;
using point_runner_parts::tolerances_of;

namespace {

constexpr std::int64_t k_compare_chunk = std::int64_t(1) << 20;  // elements per read
// Elements per piece of a window compared on one thread: large enough that a task costs little
// more than the comparison, small enough that a window spreads over the helpers.
constexpr std::int64_t k_compare_piece = std::int64_t(1) << 16;
constexpr std::uint64_t k_trial_salt = 0x7e57;
constexpr std::uint64_t k_baseline_salt = 0xba5e;
constexpr std::uint64_t k_extra_launches_salt = 0xe7a1;
constexpr std::uint64_t k_canary_salt = 0xca7a;
// Verification launches the kernel up to k_max_extra_launches more times than it has trials, on
// a trial's inputs after its outputs were compared, as the point's seed picks: a kernel cannot
// count launches to learn when verification ends.
constexpr int k_max_extra_launches = 2;
// Verification keeps the reference's answers of its last trials (one for each drawn check and
// one for the last check, within this many bytes of host memory, at least one) for those
// samples; the last check takes the last of them.
constexpr std::uint64_t k_kept_answer_bytes = std::uint64_t(1) << 30;
// A bandwidth measured again over a point's working set (analysis_context::bandwidth_at) is
// kept for later points of the same bytes (kept_measurement), for at most this many working sets.
constexpr std::size_t k_bandwidth_again_kept = 64;

// A device ceiling measured again (the analysis's bandwidth_at, vector_peak_again): what
// `measure` finds, or none where the device cannot run it (a warning names `what`); the point
// is judged by its stored ceiling then.
template <class Measure>
std::optional<double> measured_again(const char* what, Measure&& measure) {
  try {
    return measure();
  } catch (const backend_error& e) {
    spdlog::warn("the {} could not be measured again: {}", what, e.what());
    return std::nullopt;
  }
}

// One cap on the batch of every kernel a point samples side by side: the fewest launches any of
// them has buffer sets for, and at most `limit` (0: none). A sample's per-launch time carries the
// timing's own cost (the event pair, the wait for the first launch) divided by its batch; the
// sampling corrects a held batch for it (sample_loop.hpp), and kernels batched alike compare
// alike besides: a candidate held to two launches by its sets against a baseline of nine on one
// set read 13% slower, uncorrected (an axpy of 2^20 elements, hot, on an H100). A batch held by
// `limit` is timed as it is.
void share_batch_cap(std::span<timed_kernel> kernels, std::int64_t limit) {
  std::int64_t cap = limit > 0 ? limit : k_max_batch;
  for (const auto& k : kernels)
    cap = std::min(cap, k.max_batch);
  for (auto& k : kernels) {
    k.max_batch = std::max<std::int64_t>(1, cap);
    if (limit > 0) k.corrects_held_batch = false;
  }
}

// Adds the wall time from its construction to its destruction to `into` (milliseconds).
class phase_timer {
 public:
  explicit phase_timer(double& into) : m_into(into), m_start(std::chrono::steady_clock::now()) {}
  ~phase_timer() {
    m_into += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - m_start)
                  .count();
  }
  phase_timer(const phase_timer&) = delete;
  phase_timer& operator=(const phase_timer&) = delete;

 private:
  double& m_into;
  std::chrono::steady_clock::time_point m_start;
};

std::string format_us(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", v);
  return text;
}

// The canaries are copied into and compared with a buffer's guards whole: a buffer allocated
// without them (or with others) is a bug of the runner, not of the kernel.
void require_canary_guards(const device_buffer& b, const std::string& name, std::size_t canary) {
  if (b.bytes() == 0 || b.guard() == canary) return;
  throw std::logic_error("buffer \"" + name + "\" has guards of " + std::to_string(b.guard()) +
                         " bytes where its canaries need " + std::to_string(canary));
}

struct point_failure {
  std::string type, message;
};

// The row error for what a point's step threw (the exception being handled); what is no
// point's failure (a bug of the runner) goes on up.
point_failure current_point_failure() {
  try {
    throw;
  } catch (const compile_error& e) {
    return {"compile_error", e.what()};
  } catch (const backend_error& e) {
    return {point_error_type(e.kind()), e.what()};
  } catch (const std::invalid_argument& e) {
    return {"invalid_point", e.what()};
  } catch (const std::bad_alloc&) {
    return {"out_of_memory", "the host ran out of memory for this point"};
  }
}

}  // namespace

namespace point_runner_parts {

std::uint64_t buffer_bytes(const point_kernel& k) {
  std::uint64_t bytes = 0;
  for (const auto& b : k.buffers())
    bytes += b.bytes();
  return bytes;
}

tolerances tolerances_of(const job_spec& spec, const point_kernel& k) {
  const double tol = default_tolerance(k.out_type());
  return {spec.verify.atol.value_or(tol), spec.verify.rtol.value_or(tol)};
}

std::string format_tolerance(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

}  // namespace point_runner_parts

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

point_runner::point_runner(std::unique_ptr<device_backend> backend, bool defences)
    : m_backend(std::move(backend)), m_info(m_backend->device()), m_defences(defences) {
  if (m_defences) m_mask.emplace(random_answer_key());
  if (m_info.datasheet) m_analysis.datasheet = *m_info.datasheet;
  m_analysis.launch_latency_us = m_backend->launch_latency_us();
  m_analysis.cache_bytes = m_info.l2_bytes + m_info.llc_bytes;
  if (m_info.type == "cpu") {
    m_analysis.roofline_allowance = k_cpu_roofline_allowance;
    m_analysis.cpu = true;
  }
  if (m_backend->runs_device_code()) {
    m_analysis.bandwidth_at = [this](double bytes) {
      // Kept a while per working set: a sweep's or a task's submissions' points of one size
      // would each pay the triad again otherwise.
      const double now = m_backend->clock_ms();
      const auto key = std::uint64_t(bytes);
      if (auto it = m_bandwidth_again.find(key);
          it != m_bandwidth_again.end() && it->second.fresh(now)) {
        return it->second.value;
      }
      const auto gbps = measured_again("bandwidth ceiling",
                                       [&] { return stream_bandwidth_gbps(*m_backend, bytes); });
      if (!gbps) return 0.0;
      if (m_bandwidth_again.size() >= k_bandwidth_again_kept) m_bandwidth_again.clear();
      m_bandwidth_again[key] = kept_measurement{*gbps, now};
      return *gbps;
    };
    m_analysis.vector_peak_again = [this] {
      const double now = m_backend->clock_ms();
      if (m_vector_peak_again && m_vector_peak_again->fresh(now)) return m_vector_peak_again->value;
      const auto tflops = measured_again("compute ceiling", [&] { return fma_tflops(*m_backend); });
      if (!tflops) return 0.0;
      m_vector_peak_again = kept_measurement{*tflops, now};
      return *tflops;
    };
  }
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
  init_inputs(k, k.own_buffers(), seed, pattern);
}

void point_runner::init_inputs(point_kernel& k, const buffer_set& set, std::uint64_t seed,
                               int pattern) {
  std::vector<fill_target> fills;
  input_fills(k, set, seed, pattern, fills);
  m_backend->fill_all(fills);
}

void point_runner::input_fills(point_kernel& k, const buffer_set& set, std::uint64_t seed,
                               int pattern, std::vector<fill_target>& into) {
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
        f.kind = b.output || b.scratch ? fill_kind::unwritten : fill_kind::random;
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
    into.push_back({set[i], f});
  }
}

point_runner::reference_run point_runner::run_reference(point_kernel& k, const buffer_set& set) {
  reference_run run;
  run.outputs = set;
  for (std::size_t i = 0; i < k.buffers().size(); ++i) {
    const auto& b = k.buffers()[i];
    if (!b.output) continue;
    run.copies.push_back(m_backend->allocate(b.bytes()));
    m_backend->copy(run.copies.back(), *set[i], b.bytes());
    run.outputs[i] = &run.copies.back();  // a deque: stable as it grows
  }
  try {
    k.launch_reference(run.outputs);
  } catch (...) {
    rethrow_for("kernel.reference");
  }
  return run;
}

point_runner::answers point_runner::read_answers(point_kernel& k, reference_run& run) {
  answers out(k.buffers().size());
  // The keystream's pad on the device while the answers are masked there, poisoned after.
  std::optional<device_buffer> pad;
  if (m_mask) {
    pad.emplace(m_backend->allocate(m_mask->pad().size() * 8));
    m_backend->write(*pad, 0, m_mask->pad().data(), m_mask->pad().size() * 8);
  }
  fill_request poison;
  poison.kind = fill_kind::unwritten;
  for (std::size_t i = 0; i < k.buffers().size(); ++i) {
    const auto& b = k.buffers()[i];
    if (!b.output) continue;
    out[i].resize(b.bytes());
    // Masked on the device, whole words there and the bytes past the last on the host.
    const std::uint64_t words = m_mask ? b.bytes() / 8 : 0;
    if (words) {
      const auto periods = m_mask->periods(words, i);
      const device_buffer tweaks = m_backend->allocate(periods.size() * 8);
      m_backend->write(tweaks, 0, periods.data(), periods.size() * 8);
      m_backend->xor_keystream(*run.outputs[i], words, *pad, m_mask->pad().size(), tweaks);
      poison.type = dtype::i64;
      poison.count = std::int64_t(periods.size());
      m_backend->fill(tweaks, poison);
    }
    m_backend->read(*run.outputs[i], 0, out[i].data(), b.bytes());
    if (m_mask) m_mask->apply(out[i].data() + words * 8, b.bytes() - words * 8, words * 8, i);
  }
  if (pad) {
    poison.type = dtype::i64;
    poison.count = std::int64_t(m_mask->pad().size());
    m_backend->fill(*pad, poison);
  }
  poison_answers(k, run);
  return out;
}

void point_runner::poison_answers(point_kernel& k, reference_run& run) {
  // The answer does not stay in device memory a later allocation may get.
  if (!m_defences) return;
  fill_request poison;
  poison.kind = fill_kind::unwritten;
  for (std::size_t i = 0; i < k.buffers().size(); ++i) {
    const auto& b = k.buffers()[i];
    if (!b.output) continue;
    poison.type = b.type;
    poison.count = b.count;
    m_backend->fill(*run.outputs[i], poison);
  }
}

point_runner::answers point_runner::reference_answers(point_kernel& k, const buffer_set& set) {
  reference_run run = run_reference(k, set);
  return read_answers(k, run);
}

std::string point_runner::canary_hits::places() const {
  std::string out;
  if (!before.empty()) out = "before the start of " + comma_joined(before);
  if (!after.empty())
    out += (out.empty() ? "" : " and ") + ("past the end of " + comma_joined(after));
  return out;
}

std::vector<guard_ref> point_runner::guards_of(point_kernel& k, const buffer_set& set,
                                               std::vector<std::size_t>* owners) const {
  std::vector<guard_ref> out;
  for (std::size_t i = 0; i < k.buffers().size(); ++i) {
    require_canary_guards(*set[i], k.buffers()[i].name, m_canary.size());
    if (!set[i]->guard()) continue;  // no storage to write outside of
    for (const guard_side side : {guard_side::before, guard_side::after}) {
      out.push_back({set[i], side});
      if (owners) owners->push_back(i);
    }
  }
  return out;
}

void point_runner::arm_canaries(point_kernel& k, const buffer_set& set) {
  m_backend->write_guards(guards_of(k, set), m_canary.data());
}

void point_runner::check_canaries(point_kernel& k, const buffer_set& set, canary_hits& hits) {
  auto add = [](std::vector<std::string>& list, const std::string& name) {
    if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
  };
  std::vector<std::size_t> owners;
  const auto guards = guards_of(k, set, &owners);
  const auto hold = m_backend->guards_hold(guards, m_canary.data());
  for (std::size_t g = 0; g < guards.size(); ++g) {
    if (hold[g]) continue;
    const std::string& name = k.buffers()[owners[g]].name;
    add(hits.buffers, name);
    add(guards[g].side == guard_side::before ? hits.before : hits.after, name);
  }
}

void point_runner::begin_canaries(std::uint64_t point_seed) {
  m_canary.resize(k_canary_bytes);
  std::uint64_t x = mix64(point_seed ^ k_canary_salt);
  for (std::size_t i = 0; i < m_canary.size(); i += 8) {
    x = mix64(x + i);
    for (std::size_t j = 0; j < 8 && i + j < m_canary.size(); ++j)
      m_canary[i + j] = static_cast<unsigned char>(x >> (8 * j));
  }
}

// Each output is read back a window at a time into one of two host buffers, and compared in
// pieces on the helper threads (host_tasks.hpp) while the next window is read into the other.
// The pieces' findings are merged in order, so that the sums are the same however many threads
// there are.
void point_runner::compare(point_kernel& k, const buffer_set& set, const answers& expected,
                           double atol, double rtol, int pattern, output_errors& e) {
  compare_chunks(
      k,
      [&](std::size_t i, std::uint64_t offset, std::size_t bytes, int slot) {
        auto& out = m_chunk_read[slot];
        if (out.size() < bytes) out.resize(bytes);
        m_backend->read(*set[i], offset, out.data(), bytes);
        return static_cast<const unsigned char*>(out.data());
      },
      expected, atol, rtol, pattern, e);
}

void point_runner::compare(point_kernel& k, const answers& outputs, const answers& expected,
                           double atol, double rtol, int pattern, output_errors& e) {
  compare_chunks(
      k,
      [&](std::size_t i, std::uint64_t offset, std::size_t, int) {
        return static_cast<const unsigned char*>(outputs[i].data()) + offset;
      },
      expected, atol, rtol, pattern, e);
}

void point_runner::compare_chunks(point_kernel& k, const output_chunks& outputs,
                                  const answers& expected, double atol, double rtol, int pattern,
                                  output_errors& e) {
  for (std::size_t i = 0; i < k.buffers().size(); ++i) {
    const auto& b = k.buffers()[i];
    if (!b.output) continue;
    const std::size_t w = size_of(b.type);
    std::vector<output_errors> parts[2];
    std::function<void(std::size_t)> tasks[2];
    std::optional<task_group> comparing[2];
    const unsigned char* chunk[2] = {nullptr, nullptr};
    auto merge = [&](int slot) {
      if (!comparing[slot]) return;
      comparing[slot]->wait();
      comparing[slot].reset();
      for (const auto& part : parts[slot])
        merge_errors(e, part);
    };
    int slot = 0;
    for (std::int64_t off = 0; off < b.count; off += k_compare_chunk, slot ^= 1) {
      const std::int64_t n = std::min(k_compare_chunk, b.count - off);
      chunk[slot] = outputs(i, std::uint64_t(off) * w, std::size_t(n) * w, slot);
      merge(slot ^ 1);  // the window before, compared while this one was read
      const std::size_t pieces = std::size_t((n + k_compare_piece - 1) / k_compare_piece);
      parts[slot].assign(pieces, output_errors{});
      tasks[slot] = [&, i, slot, off, n, w](std::size_t p) {
        const std::int64_t first = std::int64_t(p) * k_compare_piece;
        const std::int64_t count = std::min(k_compare_piece, n - first);
        const std::uint64_t at = std::uint64_t(off + first);
        // A kept answer is masked; it is unmasked element by element as it is compared.
        const masked_answer masked{m_mask ? &*m_mask : nullptr, i, at * w};
        compare_outputs(b.type, chunk[slot] + std::size_t(first) * w, expected[i].data() + at * w,
                        count, at, atol, rtol, parts[slot][p], pattern, m_mask ? &masked : nullptr);
      };
      comparing[slot].emplace(pieces, tasks[slot]);
    }
    merge(slot ^ 1);
  }
}

std::vector<std::uint64_t> point_runner::buffer_hashes(point_kernel& k, const buffer_set& set,
                                                       hashed_buffers which) {
  const buffer_set* const one = &set;
  return buffer_hashes(k, std::span(&one, 1), which).front();
}

std::vector<std::vector<std::uint64_t>> point_runner::buffer_hashes(
    point_kernel& k, std::span<const buffer_set* const> sets, hashed_buffers which) {
  std::vector<hash_ref> refs;
  std::vector<std::pair<std::size_t, std::size_t>> at;  // each ref's set and buffer
  for (std::size_t s = 0; s < sets.size(); ++s) {
    for (std::size_t i = 0; i < k.buffers().size(); ++i) {
      const auto& b = k.buffers()[i];
      // A kernel that writes to an input changes its hash.
      const bool hashed = which == hashed_buffers::all ||
                          (which == hashed_buffers::outputs ? b.output : !b.output && !b.scratch);
      if (!hashed) continue;
      refs.push_back({(*sets[s])[i], b.bytes()});
      at.emplace_back(s, i);
    }
  }
  const auto hashes = m_backend->hash_all(refs);
  std::vector<std::vector<std::uint64_t>> out(sets.size(),
                                              std::vector<std::uint64_t>(k.buffers().size(), 0));
  for (std::size_t r = 0; r < refs.size(); ++r)
    out[at[r].first][at[r].second] = hashes[r];
  return out;
}

verification_result point_runner::verify(point_kernel& k, const job_spec& spec, std::uint64_t seed,
                                         std::vector<kept_answer>* kept, shared_answers* shared,
                                         check_costs* costs) {
  verification_result v;
  if (spec.verify.trials == 0) {
    v.note = "verify.trials is 0";
    return v;
  }
  if (!k.has_reference()) {
    v.note = "the kernel has no reference to compare with";
    return v;
  }
  const auto [atol, rtol] = tolerances_of(spec, k);
  v.tolerance = rtol;
  output_errors e;
  bool norm_failed = false;
  canary_hits outside;
  const auto own = k.own_buffers();
  const int trials = spec.verify.trials;
  // After which trials the extra launches come (a trial may get two).
  std::vector<int> extra_after;
  const int extra =
      m_defences ? int(mix64(seed ^ k_extra_launches_salt) % (k_max_extra_launches + 1)) : 0;
  for (int x = 0; x < extra; ++x)
    extra_after.push_back(
        int(mix64(seed ^ mix64(k_extra_launches_salt + std::uint64_t(x) + 1)) % trials));
  // The trials alternate the two unwritten patterns from one the point's seed picks, so a
  // kernel that recognises one poison and writes only where it sees it fails on the other.
  const int first_pattern = int(mix64(seed ^ k_trial_salt) & 1);
  // The answers of the last `keep` trials are kept for the checked timed samples.
  int keep = 0;
  if (kept) {
    std::uint64_t output_bytes = 1;
    for (const auto& b : k.buffers())
      output_bytes += b.output ? b.bytes() : 0;
    keep = int(
        std::clamp<std::uint64_t>(k_kept_answer_bytes / output_bytes, 1, k_max_drawn_checks + 1));
    kept->clear();
  }
  const std::string reference_key = shared ? k.reference_key() : std::string();
  for (int trial = 0; trial < trials; ++trial) {
    const int pattern = (first_pattern + trial) % 2;
    const std::uint64_t trial_seed = mix64(seed ^ mix64(k_trial_salt + std::uint64_t(trial)));
    init_inputs(k, trial_seed, pattern);
    // The reference's answer, from the variant before where it has the same reference.
    const std::string key =
        reference_key.empty()
            ? std::string()
            : reference_key + "trial " + std::to_string(trial_seed) + ' ' + std::to_string(pattern);
    const auto known = key.empty() ? nullptr : &shared->by_key;
    answers expected;
    double check_ms = shared ? shared->reference_ms : 0;  // this trial's reference and compare
    const auto cached = known ? known->find(key) : std::map<std::string, answers>::iterator();
    if (known && cached != known->end()) {
      expected = cached->second;
    } else {
      check_ms = 0;
      const phase_timer timer(m_phases.reference);
      const phase_timer cost(check_ms);
      expected = reference_answers(k, own);
      std::uint64_t bytes = 0;
      for (const auto& a : expected)
        bytes += a.size();
      if (known && shared->bytes + bytes <= k_kept_answer_bytes) {
        shared->by_key.emplace(key, expected);
        shared->bytes += bytes;
      }
    }
    // The inputs as the kernel gets them (after the reference, which may not change them either).
    // Inputs are hashed around the first trial's launch and the last's (which the kernel cannot
    // tell, their number varying): a kernel writes to its inputs in every launch or under some
    // condition, and no timed sample can profit from it, each getting fresh inputs. Hashing
    // every trial cost more than the rest of a memory-bound kernel's verification.
    const bool hashed = m_defences && (trial == 0 || trial + 1 == trials);
    std::vector<std::uint64_t> inputs_before;
    if (hashed) {
      const phase_timer timer(m_phases.hashes);
      inputs_before = buffer_hashes(k, own, hashed_buffers::inputs);
    }
    if (m_defences) m_backend->scrub_local_memory();  // nothing the reference left there
    // Timed as a sample is, so that timed samples far faster than verified launches show.
    const timed_sample s = m_backend->time_launches(kernel_role::candidate, [&] { k.launch(own); });
    if (s.valid && s.time_us > 0)
      v.launch_us = std::min(v.launch_us.value_or(s.time_us), s.time_us);
    m_backend->synchronize();
    std::vector<std::uint64_t> inputs_after;
    if (hashed) {
      const phase_timer timer(m_phases.hashes);
      inputs_after = buffer_hashes(k, own, hashed_buffers::inputs);
    }
    for (std::size_t i = 0; i < inputs_before.size(); ++i) {
      const auto& b = k.buffers()[i];
      if (inputs_before[i] != inputs_after[i] &&
          std::find(v.inputs_written.begin(), v.inputs_written.end(), b.name) ==
              v.inputs_written.end()) {
        v.inputs_written.push_back(b.name);
      }
    }
    if (m_defences) check_canaries(k, own, outside);
    // The latest run's: the first may have compiled the reference, which no check pays again.
    if (shared) shared->reference_ms = check_ms;
    output_errors t;
    {
      const phase_timer timer(m_phases.compare);
      const phase_timer cost(check_ms);
      compare(k, own, expected, atol, rtol, pattern, t);
    }
    // What a check afresh costs, as the latest trial found it: on PoCL the first, compiling
    // the reference, took 355 ms where later ones took 9, and priced as that, no check afresh
    // came in a run of 100 samples.
    if (costs) costs->check_ms = check_ms;
    v.norm_rel_err = std::max(v.norm_rel_err, norm_relative_error(t));
    v.ref_near_zero = std::max(v.ref_near_zero, near_zero_share(t));
    v.ref_not_finite = std::max(v.ref_not_finite, not_finite_share(t));
    norm_failed = norm_failed || (!t.wrong && fails_norm_test(t, rtol));
    e.max_abs = std::max(e.max_abs, t.max_abs);
    e.max_rel = std::max(e.max_rel, t.max_rel);
    e.unwritten += t.unwritten;
    e.wrong += t.wrong;
    e.first_wrong = std::min(e.first_wrong, t.first_wrong);
    ++v.trials;
    ++v.launches;
    if (t.wrong || norm_failed) break;  // one failing trial decides
    if (trial >= trials - keep) {
      const phase_timer timer(m_phases.hashes);
      kept->push_back({trial_seed, pattern, std::move(expected),
                       buffer_hashes(k, own, hashed_buffers::outputs)});
    }
    for (const int after : extra_after) {
      if (after != trial) continue;
      if (m_defences) m_backend->scrub_local_memory();
      k.launch(own);
      ++v.launches;
    }
  }
  if (costs) costs->launch_ms = v.launch_us.value_or(0) / 1000;
  v.max_abs_err = e.max_abs;
  v.max_rel_err = e.max_rel;
  v.unwritten = e.unwritten;
  v.status = e.wrong || norm_failed ? "failed" : "passed";
  // Timed samples are checked only where verification passed: otherwise the point scores
  // nothing anyway, and a failed trial's answers are no standard.
  if (kept && v.status != "passed") kept->clear();
  std::vector<std::string> notes;
  if (e.unwritten) {
    notes.push_back(std::to_string(e.unwritten) + " output elements were never written");
  } else if (e.wrong) {
    notes.push_back(std::to_string(e.wrong) +
                    " output elements differ from the reference beyond atol " +
                    format_tolerance(atol) + " + rtol " + format_tolerance(rtol) +
                    "·|ref| (first at element " + std::to_string(e.first_wrong) + ")");
  } else if (norm_failed) {
    notes.push_back("every element is within atol " + format_tolerance(atol) + " + rtol " +
                    format_tolerance(rtol) + "·|ref|, but the norm-relative error ‖out − ref‖ / " +
                    "‖ref‖ is " + format_tolerance(v.norm_rel_err) + ", above rtol");
  }
  if (!v.inputs_written.empty()) {
    notes.push_back("the kernel wrote to its input " + comma_joined(v.inputs_written) +
                    " (a buffer it may write without being checked is \"scratch\": true)");
  }
  v.written_out_of_bounds = outside.buffers;
  if (!outside.empty()) notes.push_back("the kernel wrote " + outside.places());
  if (v.ref_not_finite > 0 && v.ref_near_zero + v.ref_not_finite > k_low_signal_share) {
    notes.push_back(format_tolerance(100 * v.ref_not_finite) +
                    "% of the reference's output elements are NaN or infinite, which an output "
                    "of NaN matches: a reference that reads an output before writing it finds "
                    "the unwritten NaN there; give that buffer an init (\"random\") so that it "
                    "starts with data");
  } else if (v.ref_near_zero > k_low_signal_share) {
    notes.push_back(format_tolerance(100 * v.ref_near_zero) +
                    "% of the reference's output elements are within atol " +
                    format_tolerance(atol) +
                    " of zero: a constant output comes close to passing; give a smaller atol");
  }
  for (const auto& n : notes)
    v.note += (v.note.empty() ? "" : "; ") + n;
  return v;
}

point_result point_runner::measure(const job_plan& plan, std::uint64_t index, std::uint64_t seed) {
  m_phases = {};
  const phase_timer whole(m_phases.total);
  auto lap_start = std::chrono::steady_clock::now();
  // The wall time since the last lap, added to `phase`.
  auto lap = [&](double& phase) {
    const auto now = std::chrono::steady_clock::now();
    phase += std::chrono::duration<double, std::milli>(now - lap_start).count();
    lap_start = now;
  };
  const host_block_cache::use blocks(m_host_blocks);
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
  m_draw_key = entropy64();
  try {
    m_backend->begin_point({index, point_seed, &spec.mock});
    m_host_blocks.begin_point();
    double need = footprint_bytes(instance);
    if (baseline_instance) need += footprint_bytes(*baseline_instance);
    check_memory(need, plan.describe_point(index));

    std::optional<fault_phase> phase(std::in_place, "compiling the kernel");
    point_kernel candidate(*m_backend, instance);
    std::optional<point_kernel> baseline;
    try {
      phase.emplace("compiling the baseline");
      if (baseline_instance) baseline.emplace(*m_backend, *baseline_instance);
    } catch (...) {
      rethrow_for("fitness.baseline");
    }
    phase.emplace("preparing the kernel's buffers");
    const bool defended = m_defences && m_backend->runs_device_code();
    if (defended) {
      begin_canaries(point_seed);
      m_local_owner = nullptr;
      arm_canaries(candidate, candidate.own_buffers());
    }
    lap(m_phases.setup);

    point_result r;
    r.index = index;
    r.params = plan.params(index);
    r.l2 = spec.timing.l2;
    r.simulated = simulated;
    std::vector<kept_answer> kept;
    check_costs costs;
    phase.emplace("verification (the kernel's launches and the reference's)");
    r.verification =
        m_backend->runs_device_code()
            ? verify(candidate, spec, point_seed, defended ? &kept : nullptr, nullptr, &costs)
            : m_backend->simulate_verification(spec, instance);
    lap(m_phases.verification);
    // Timed launches start from a module no verification launch touched.
    phase.emplace("loading the kernel afresh for timing");
    if (defended) candidate.load_fresh();
    phase.emplace("preparing the timed launches");
    init_inputs(candidate, point_seed);
    if (baseline) init_inputs(*baseline, point_seed ^ k_baseline_salt);

    std::optional<timed_checks> checks;
    std::vector<timed_kernel> kernels;
    double last_check_ms = 0;  // in the sampling's wall time, but a check's
    if (defended) {
      checks.emplace(*this, candidate, spec, point_seed, std::move(kept), true, costs);
      kernels.push_back({[&] { candidate.launch(checks->next()); }, kernel_role::candidate});
      kernels.back().max_batch = checks->max_batch();
      kernels.back().before = [&](std::int64_t n, bool timed) {
        const phase_timer timer(m_phases.hooks);
        checks->before(n, timed);
      };
      kernels.back().before_bytes = buffer_bytes(candidate);
      kernels.back().split = [&] { return checks->split(); };
      kernels.back().after = [&](const timed_sample& sample) {
        const phase_timer timer(m_phases.hooks);
        checks->after(sample);
      };
      kernels.back().last = [&](timed_kernel& k, bool cold) {
        const phase_timer timer(last_check_ms);
        checks->check_last(k, cold);
      };
    } else {
      kernels.push_back(
          {[&, own = candidate.own_buffers()] { candidate.launch(own); }, kernel_role::candidate});
    }
    buffer_set baseline_buffers;
    std::optional<timed_checks> baseline_sets;
    if (baseline && checks) {
      // The baseline is timed as the candidate is, so that both are in the same state of the
      // caches and batched alike: inputs refreshed before each sample, a set of buffers per
      // launch of a batch. Its answers are not checked (it is the operator's kernel).
      try {
        baseline_sets.emplace(*this, *baseline, spec, point_seed ^ k_baseline_salt,
                              std::vector<kept_answer>{}, false);
      } catch (...) {
        rethrow_for("fitness.baseline");
      }
      kernels.push_back({[&] { baseline->launch(baseline_sets->next()); }, kernel_role::baseline});
      kernels.back().max_batch = baseline_sets->max_batch();
      kernels.back().before = [&](std::int64_t n, bool timed) {
        const phase_timer timer(m_phases.hooks);
        baseline_sets->before(n, timed);
      };
      kernels.back().before_bytes = buffer_bytes(*baseline);
    } else if (baseline) {
      baseline_buffers = baseline->own_buffers();
      kernels.push_back({[&] { baseline->launch(baseline_buffers); }, kernel_role::baseline});
    }
    share_batch_cap(kernels, m_batch_limit);
    std::vector<sampling_result> sampled;
    lap(m_phases.preparation);
    phase.emplace("the timed launches and their checks");
    try {
      sampled = sample_interleaved(*m_backend, kernels, spec.timing, &m_fixed_cost);
    } catch (...) {
      if (baseline && kernels[1].threw) rethrow_for("fitness.baseline");
      throw;
    }
    phase.reset();
    lap(m_phases.sampling);
    m_phases.sampling -= last_check_ms;
    m_phases.checks += last_check_ms;
    if (checks) {
      checks->report(r.verification);
      // A batch's time per launch is compared with its single launches too: far faster is
      // what a kernel that worked once per batch would show (faster_than_verification).
      if (kernels[0].batch > 1 && kernels[0].single_us > 0) {
        auto& fastest = r.verification.launch_us;
        fastest = std::min(fastest.value_or(kernels[0].single_us), kernels[0].single_us);
      }
    }
    lap(m_phases.checks);
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
    fill_sampled(r, main, kernels[0]);
    r.resources = candidate.resources();
    analyse_point(r, instance, spec, m_analysis, speedup);
    add_sampling_advice(r, main, !checks || checks->rotates());
    return r;
  } catch (...) {
    const auto f = current_point_failure();
    return failed(f.type, f.message);
  }
}

void point_runner::fill_sampled(point_result& r, const sampling_result& s, const timed_kernel& k) {
  r.status = point_status::ok;
  r.time_us = s.summary;
  r.samples = s.samples_us.size();
  r.discarded = s.discarded;
  r.converged = s.converged;
  r.stop_reason = s.stop_reason;
  r.sampling_ms = s.elapsed_ms;
  r.batch = k.batch;
  r.batch_corrected = s.batch_corrected;
  r.environment.device = m_info.name;
  r.environment.driver = m_info.driver;
  r.environment.clock_mhz = m_info.clock_mhz;
  if (auto reading = m_backend->read_telemetry()) {
    if (reading->sm_clock_mhz) r.environment.clock_mhz = *reading->sm_clock_mhz;
    r.environment.temperature_c = reading->temperature_c;
    r.environment.power_w = reading->power_w;
  }
}

std::vector<point_result> point_runner::measure_all(const job_plan& plan, std::uint64_t index,
                                                    std::uint64_t seed) {
  if (plan.variant_count() == 0) return {measure(plan, index, seed)};
  return measure_variants(plan, index, seed);
}

std::vector<point_result> point_runner::measure_variants(const job_plan& plan, std::uint64_t index,
                                                         std::uint64_t seed) {
  m_phases = {};  // verification's parts only (point_phases)
  const host_block_cache::use blocks(m_host_blocks);
  const auto& spec = plan.spec();
  const std::size_t count = plan.variant_count();
  const bool simulated = !m_backend->runs_device_code();
  std::vector<std::optional<point_result>> rows(count);
  auto fail = [&](std::size_t v, const std::string& type, const std::string& message) {
    auto r = failed_point(index, plan.params(index), type, message);
    r.variant = spec.variants[v].name;
    r.l2 = spec.timing.l2;
    r.simulated = simulated;
    r.environment.device = m_info.name;
    r.environment.driver = m_info.driver;
    rows[v] = std::move(r);
  };
  auto fail_rest = [&](const std::string& type, const std::string& message) {
    for (std::size_t v = 0; v < count; ++v) {
      if (!rows[v]) fail(v, type, message);
    }
  };
  auto finish = [&] {
    std::vector<point_result> out;
    out.reserve(count);
    for (auto& r : rows)
      out.push_back(std::move(*r));
    return out;
  };
  if (!m_backend->usable()) {
    fail_rest("device_fault", "the device faulted earlier in this worker");
    return finish();
  }
  if (auto why = unsupported_language(spec, m_info)) {
    fail_rest("unsupported", *why);
    return finish();
  }

  struct variant_state {
    std::size_t v = 0;
    kernel_instance instance;
    std::optional<point_kernel> kernel;
    verification_result verification;
    std::vector<kept_answer> kept;
    check_costs costs;
    std::optional<timed_checks> checks;
    buffer_set own;
    std::uint64_t refreshes = 0;
  };
  std::vector<std::unique_ptr<variant_state>> live;
  double need = 0;
  for (std::size_t v = 0; v < count; ++v) {
    try {
      auto s = std::make_unique<variant_state>();
      s->v = v;
      s->instance = plan.resolve_variant(v, index);
      need += footprint_bytes(s->instance);
      live.push_back(std::move(s));
    } catch (const plan_error& e) {
      fail(v, "invalid_point", e.what());
    }
  }
  // Runs one variant's step; what it throws fails that variant's row only.
  auto attempt = [&](variant_state& s, const auto& step) {
    try {
      step();
      return true;
    } catch (...) {
      const auto f = current_point_failure();
      fail(s.v, f.type, f.message);
    }
    return false;
  };
  // Drops the variants whose row is decided; after a fault that lost the device, all of them.
  auto prune = [&] {
    if (!m_backend->usable()) {
      fail_rest("device_fault",
                "the device faulted while another variant of this point was measured");
    }
    std::erase_if(live, [&](const auto& s) { return rows[s->v].has_value(); });
  };

  const std::uint64_t point_seed = mix64(seed ^ mix64(index + 1));
  m_draw_key = entropy64();
  const bool defended = m_defences && m_backend->runs_device_code();
  try {
    m_backend->begin_point({index, point_seed, &spec.mock});
    m_host_blocks.begin_point();
    begin_canaries(point_seed);
    m_local_owner = nullptr;
    check_memory(need,
                 plan.describe_point(index) + " with its " + std::to_string(count) + " variants");
  } catch (const backend_error& e) {
    fail_rest(point_error_type(e.kind()), e.what());
    return finish();
  }
  // Compiled and verified one by one; every variant's inputs come from the point's seed, so
  // that each is checked against the reference's answer for the same inputs, which the
  // variants with the same reference take from the first (its run once per trial).
  shared_answers shared;
  for (auto& s : live) {
    if (rows[s->v]) continue;
    attempt(*s, [&] {
      std::optional<fault_phase> phase(std::in_place, "compiling a variant");
      s->kernel.emplace(*m_backend, s->instance);
      if (defended) arm_canaries(*s->kernel, s->kernel->own_buffers());
      phase.emplace("a variant's verification (its launches and the reference's)");
      s->verification = m_backend->runs_device_code()
                            ? verify(*s->kernel, spec, point_seed, defended ? &s->kept : nullptr,
                                     &shared, &s->costs)
                            : m_backend->simulate_verification(spec, s->instance);
      phase.emplace("loading a variant afresh for timing");
      if (defended) s->kernel->load_fresh();
      init_inputs(*s->kernel, point_seed);
      s->own = s->kernel->own_buffers();
    });
    if (!m_backend->usable()) break;
  }
  prune();
  std::vector<timed_kernel> kernels;
  for (auto& s : live) {
    if (!defended) {
      kernels.push_back(
          {[&k = *s->kernel, &own = s->own] { k.launch(own); }, kernel_role::candidate});
      continue;
    }
    const bool ok = attempt(*s, [&] {
      s->checks.emplace(*this, *s->kernel, spec, point_seed, std::move(s->kept), true, s->costs);
    });
    if (!ok) continue;
    auto& checks = *s->checks;
    kernels.push_back(
        {[&k = *s->kernel, &checks] { k.launch(checks.next()); }, kernel_role::candidate});
    kernels.back().max_batch = checks.max_batch();
    kernels.back().before = [&checks](std::int64_t n, bool timed) { checks.before(n, timed); };
    kernels.back().before_bytes = buffer_bytes(*s->kernel);
    kernels.back().split = [&checks] { return checks.split(); };
    kernels.back().after = [&checks](const timed_sample& sample) { checks.after(sample); };
    kernels.back().last = [&checks](timed_kernel& k, bool cold) { checks.check_last(k, cold); };
  }
  prune();
  if (live.empty()) return finish();
  share_batch_cap(kernels, m_batch_limit);

  // What one variant's launches threw (a launch the device refuses, such as more local memory
  // than it has) fails that variant's row, and the others are sampled again without it; where
  // the device was lost, or no one variant threw it, every row fails.
  std::vector<sampling_result> sampled;
  while (!live.empty()) {
    try {
      const fault_phase phase("the variants' timed launches and their checks");
      sampled = sample_interleaved(*m_backend, kernels, spec.timing, &m_fixed_cost);
      break;
    } catch (...) {
      const auto f = current_point_failure();
      const auto culprit = std::find_if(kernels.begin(), kernels.end(),
                                        [](const timed_kernel& k) { return k.threw; });
      if (culprit == kernels.end()) {
        fail_rest(f.type, f.message);
        return finish();
      }
      const auto i = std::size_t(culprit - kernels.begin());
      fail(live[i]->v, f.type, f.message);
      prune();  // the others too, where the device was lost
      kernels.erase(culprit);
      for (auto& k : kernels)
        k.threw = false;
      m_local_owner = nullptr;  // the failed variant's checks are gone
    }
  }
  if (live.empty()) return finish();
  try {
    for (std::size_t i = 0; i < live.size(); ++i) {
      auto& s = *live[i];
      if (!s.checks) continue;
      s.checks->report(s.verification);
      if (kernels[i].batch > 1 && kernels[i].single_us > 0) {
        auto& fastest = s.verification.launch_us;
        fastest = std::min(fastest.value_or(kernels[i].single_us), kernels[i].single_us);
      }
    }
  } catch (...) {
    const auto f = current_point_failure();
    fail_rest(f.type, f.message);
    return finish();
  }

  // The variants that sampled; the slowest of them, and the baseline among them.
  std::vector<std::size_t> measured;
  for (std::size_t i = 0; i < live.size(); ++i) {
    if (sampled[i].samples_us.empty()) {
      fail(live[i]->v, "internal",
           "every sample was discarded (the device throttled, or the host could not queue the "
           "launches in time)");
    } else {
      measured.push_back(i);
    }
  }
  std::optional<std::size_t> slowest, baseline;
  for (const std::size_t i : measured) {
    if (!slowest || sampled[i].summary.median > sampled[*slowest].summary.median) slowest = i;
    if (plan.baseline_variant() == live[i]->v) baseline = i;
  }
  auto speedup_over = [&](std::size_t i,
                          std::optional<std::size_t> other) -> std::optional<speedup_estimate> {
    if (!other) return std::nullopt;
    const auto& a = sampled[i].samples_us;
    const auto& b = sampled[*other].samples_us;
    if (a.size() != b.size()) return std::nullopt;
    return paired_speedup(a, b);
  };
  // The slowest by the medians, then by the paired ratios the comparison reports: a variant that
  // reads slower than it pair by pair takes its place, so that none reads a speedup under 1 over
  // the slowest (where the pairs rank the variants in a circle, as many steps as variants).
  for (std::size_t step = 0; slowest && step < measured.size(); ++step) {
    std::optional<std::size_t> slower;
    double least = 1;  // the speedup over the slowest of the slower one
    for (const std::size_t i : measured) {
      const auto e = i == *slowest ? std::nullopt : speedup_over(i, slowest);
      if (e && e->speedup < least) {
        slower = i;
        least = e->speedup;
      }
    }
    if (!slower) break;
    slowest = slower;
  }
  auto as_variant_speedup = [&](const speedup_estimate& e, std::size_t other) {
    return variant_speedup{spec.variants[live[other]->v].name, e.speedup, e.ci95_low, e.ci95_high};
  };
  for (const std::size_t i : measured) {
    auto& s = *live[i];
    point_result r;
    r.index = index;
    r.params = plan.params(index);
    r.variant = spec.variants[s.v].name;
    r.l2 = spec.timing.l2;
    r.simulated = simulated;
    r.verification = std::move(s.verification);
    fill_sampled(r, sampled[i], kernels[i]);
    r.resources = s.kernel->resources();
    const auto over_baseline = speedup_over(i, baseline);
    const auto over_slowest = speedup_over(i, slowest);
    variant_comparison c;
    if (over_slowest) c.over_slowest = as_variant_speedup(*over_slowest, *slowest);
    if (over_baseline) c.over_baseline = as_variant_speedup(*over_baseline, *baseline);
    r.comparison = std::move(c);
    // The fitness of a variant is over the baseline variant.
    analyse_point(r, s.instance, spec, m_analysis, over_baseline);
    add_sampling_advice(r, sampled[i], !s.checks || s.checks->rotates());
    rows[s.v] = std::move(r);
  }
  return finish();
}

void point_runner::add_sampling_advice(point_result& r, const sampling_result& s, bool rotated) {
  if (const auto& c = s.batch_corrected) {
    r.advice.push_back(
        "each sample held " + std::to_string(r.batch) + (r.batch == 1 ? " launch" : " launches") +
        ", as many as the point's buffer sets allow (one a launch, within half the device's "
        "caches), where it would take " +
        std::to_string(c->free_batch) + ": its time per launch is read as at " +
        std::to_string(c->free_batch) + ", the sample's fixed cost (" +
        format_us(c->fixed_cost_us) + " us, measured on the device) shared by that many (" +
        format_us(c->us) + " us a launch taken off)");
  }
  if (!rotated) {
    r.advice.push_back(
        "the device had no room for a second set of buffers, so timed launches did not "
        "alternate between two addresses");
  }
  if (s.throttled_kept > 0) {
    r.advice.push_back(std::to_string(s.throttled_kept) + " of the " + std::to_string(r.samples) +
                       " samples kept ran while the device throttled (thermal or hardware "
                       "slowdown), too many to discard: the time is what the device gives under "
                       "this load");
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

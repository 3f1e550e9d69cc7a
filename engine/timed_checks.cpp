#include "engine/timed_checks.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "engine/fill_pattern.hpp"
#include "engine/statistics.hpp"
#include "engine/text_list.hpp"

namespace kernelscan {

using point_runner_parts::buffer_bytes;
using point_runner_parts::format_tolerance;
using point_runner_parts::k_afresh_share;
using point_runner_parts::k_check_one_in;
using point_runner_parts::k_max_drawn_checks;
using point_runner_parts::k_memory_headroom;
using point_runner_parts::tolerances_of;

namespace {

constexpr std::uint64_t k_sample_salt = 0x5a3b1e;
constexpr std::uint64_t k_check_salt = 0xc4ec;
constexpr std::uint64_t k_batch_set_salt = 0xba7c;
constexpr std::uint64_t k_batch_check_salt = 0xba7cc;
constexpr std::uint64_t k_probe_salt = 0x9b0be;
constexpr std::uint64_t k_split_salt = 0x5b117;
// The other sets whose buffers a probe watches (probe_other_sets), and how often a batched
// sample is preceded by one (probe_chance): with probability 1/k_probe_one_in at most, and less
// where probes would take more than k_probe_share of the sampling's wall time.
constexpr std::size_t k_probe_sets = 4;
constexpr double k_probe_one_in = 16;
constexpr double k_probe_share = 0.05;
// Until this many probes have run, a batched sample is preceded by one with a split sample's
// first chance at least (probe_chance).
constexpr int k_min_probes = 3;
// A probe's hold is drawn from the host's enqueueing of this many recent batched samples, and
// lasts this long at most (a backend's hold gives up after seconds).
constexpr std::size_t k_enqueues_kept = 9;
constexpr double k_most_probe_hold_us = 20000;
// The buffer sets of a batch fit in half the device's caches, so that a hot batch stays hot (the
// sets filled first are still there when the batch reads them, beside whatever else the caches
// hold); where a device does not tell its cache sizes, half of this many bytes.
constexpr std::uint64_t k_batch_sets_default_bytes = std::uint64_t(32) << 20;

// A batched sample is split (timed launch by launch) with probability 1/k_split_one_in; until
// twice k_min_split_samples have been, with more where the spec's fewest samples would split
// fewer (at most k_split_most), so that a short run has enough to judge. On a GPU a split
// sample is not a timed one: a chance kept low past the first few keeps the samples it costs few.
constexpr double k_split_one_in = 8;
constexpr double k_split_most = 0.5;

double split_chance(const job_spec& spec) {
  const double fewest = std::max(1, spec.timing.min_samples);
  return std::clamp(2.0 * k_min_split_samples / fewest, 1 / k_split_one_in, k_split_most);
}

// Whether 64 random `bits` fall below `chance` (a probability) as a uniform draw in [0, 1).
bool drawn_below(std::uint64_t bits, double chance) {
  return double(bits >> 11) * 0x1p-53 < chance;
}

// The seed of the inputs of set `j` of a batch whose sample (or probe) has seed `s`.
std::uint64_t batch_set_seed(std::uint64_t s, std::size_t j) {
  return j == 0 ? s : mix64(s ^ mix64(k_batch_set_salt + j));
}

}  // namespace

point_runner::timed_checks::timed_checks(point_runner& runner, point_kernel& k,
                                         const job_spec& spec, std::uint64_t seed,
                                         std::vector<kept_answer> kept, bool scrubs,
                                         check_costs costs)
    : m_runner(runner),
      m_k(k),
      m_seed(seed),
      m_kept(std::move(kept)),
      m_tolerances(tolerances_of(spec, k)),
      m_scrubs(scrubs),
      m_costs(costs),
      m_draw_key(runner.m_draw_key),
      m_split_chance(split_chance(spec)) {
  m_sets[0] = m_sets[1] = k.own_buffers();
  // Outputs that start as the unwritten pattern hold one answer however often the kernel runs;
  // an output it accumulates into (one with an init) is checkable after a single launch only.
  m_pure = std::all_of(k.buffers().begin(), k.buffers().end(),
                       [](const point_buffer& b) { return !b.output || b.init == arg_init::none; });
  // Whether the backend screens every output on the device: asked of as many elements as the
  // screen's widest launch takes where the samples will be checked, so that its first launch
  // (a kernel PoCL compiles for that grid, or a GPU loads) is not part of what the first check
  // afresh costs, which prices the next (afresh_share): on PoCL with its kernel cache empty
  // that check took about 90 ms where later ones took 2 to 8.
  m_screens = true;
  for (std::size_t i = 0; i < k.buffers().size() && m_screens; ++i) {
    const auto& b = k.buffers()[i];
    const std::int64_t probe =
        m_kept.empty() ? 0 : std::min(b.count, device_backend::k_screen_widest);
    m_screens = !b.output ||
                runner.m_backend->screen_outputs(*m_sets[0][i], *m_sets[0][i], b.type, probe, 0, 0);
  }
  // The second set, where the device has room for it.
  try {
    runner.check_memory(double(buffer_bytes(k)), "a second set of buffers");
    m_second.reserve(k.buffers().size());
    for (std::size_t i = 0; i < k.buffers().size(); ++i) {
      m_second.push_back(
          runner.m_backend->allocate_guarded(k.buffers()[i].bytes(), k_canary_bytes));
      m_sets[1][i] = &m_second.back();
    }
    runner.arm_canaries(k, m_sets[1]);
  } catch (const backend_error& e) {
    if (e.kind() != fault_kind::out_of_memory) throw;
    m_second.clear();
    m_sets[1] = m_sets[0];
  }
  // As many sets as a batch may use: within the device's caches and its free memory (the two
  // sets above are two of them). Without room for a second set, launches are not batched.
  // The caches are the ones a lone set stays in between back-to-back launches: a CPU device's
  // cores' L2s where the set fits in them (it would not stay in the shared L3 the driver
  // reports, which sets batched in a share of it would run from), else L2 and beyond.
  if (rotates()) {
    const std::uint64_t set_bytes = std::max<std::uint64_t>(buffer_bytes(k), 1);
    const auto& info = runner.m_backend->device();
    const auto in_share = [&](std::uint64_t caches) {
      return std::uint64_t(double(caches) * runner.m_sets_cache_share / double(set_bytes));
    };
    const std::uint64_t caches = info.l2_bytes + info.llc_bytes;
    std::uint64_t in_caches = in_share(caches ? caches : k_batch_sets_default_bytes);
    if (info.core_caches_bytes >= set_bytes) {
      in_caches = std::min(in_caches, in_share(info.core_caches_bytes));
    }
    const double guarded = double(set_bytes) + 2.0 * double(k_canary_bytes * k.buffers().size());
    const double in_memory =
        double(runner.m_backend->free_memory()) * k_memory_headroom / guarded + 2;
    m_max_batch = std::clamp<std::int64_t>(std::int64_t(std::min(double(in_caches), in_memory)), 1,
                                           k_max_batch);
  }
}

const buffer_set& point_runner::timed_checks::next() {
  if (m_batch.empty()) return current();
  const std::size_t j = std::size_t(m_launch++) % m_batch.size();
  // Each call comes before its launch is enqueued: the first to the last span the others'. The
  // clock is read at those two alone, not at every launch.
  if (j == 0) {
    m_enqueue_began = std::chrono::steady_clock::now();
  } else if (j + 1 == m_batch.size() && !m_split) {
    const auto now = std::chrono::steady_clock::now();
    m_enqueue_us.push_back(
        std::chrono::duration<double, std::micro>(now - m_enqueue_began).count() / double(j));
    if (m_enqueue_us.size() > k_enqueues_kept) m_enqueue_us.pop_front();
  }
  return *m_batch[j];
}

void point_runner::timed_checks::before(std::int64_t launches, bool timed) {
  ++m_samples;
  m_current = int(m_samples % 2);  // both sets are the kernel's own where it does not rotate
  m_launch = 0;
  m_batch.clear();
  m_pending.clear();
  if (timed && launches > 1 && launches <= m_max_batch) batch_sets(launches);
  if (timed && m_timed++ == 0) m_first_timed = std::chrono::steady_clock::now();
  const std::uint64_t s = mix64(m_seed ^ mix64(k_sample_salt + m_samples));
  const std::uint64_t pick = mix64(s ^ m_draw_key);
  if (!m_batch.empty() && !m_kept.empty() &&
      (m_last || drawn_below(mix64(pick ^ k_probe_salt), probe_chance()))) {
    const auto started = std::chrono::steady_clock::now();
    probe_other_sets(mix64(s ^ k_probe_salt));
    m_probe_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    m_runner.m_phases.probes += m_probe_ms;
  }
  m_split = timed && !m_batch.empty() && !m_kept.empty() &&
            (m_last || drawn_below(mix64(pick ^ k_split_salt),
                                   m_split_times.size() < 2 * std::size_t(k_min_split_samples)
                                       ? m_split_chance
                                       : 1 / k_split_one_in));
  if (timed && m_runner.m_prime_samples && rotates()) m_k.launch(m_sets[1 - m_current]);
  const std::size_t sets = std::max<std::size_t>(1, m_batch.size());
  // The last kept answer is the last check's.
  const std::size_t drawable =
      std::min<std::size_t>(k_max_drawn_checks, m_kept.empty() ? 0 : m_kept.size() - 1);
  const bool checked = timed && checkable(launches);
  const std::uint64_t draw = mix64(pick ^ k_check_salt);
  const bool drawn = checked && !m_last && draw % k_check_one_in == 0;
  const bool from_kept = drawn && std::size_t(m_drawn) < drawable;
  const bool last_kept = checked && m_last && !m_kept.empty();
  const bool afresh = drawn && !from_kept && drawn_below(mix64(draw), afresh_share(launches));
  const std::size_t at = std::size_t(mix64(pick ^ k_batch_check_salt) % sets);
  m_fills.clear();
  for (std::size_t j = 0; j < sets; ++j) {
    const buffer_set& set = m_batch.empty() ? current() : *m_batch[j];
    if ((from_kept || last_kept) && j == at) {
      const kept_answer& a = from_kept ? m_kept[std::size_t(m_drawn++)] : m_kept.back();
      m_runner.input_fills(m_k, set, a.seed, a.pattern, m_fills);
      m_pending.push_back({&set, &a, a.seed, a.pattern});
      continue;
    }
    const std::uint64_t seed = batch_set_seed(s, j);
    m_runner.input_fills(m_k, set, seed, int(seed & 1), m_fills);
    if ((afresh && j == at) || (checked && m_last))
      m_pending.push_back({&set, nullptr, seed, int(seed & 1)});
  }
  m_runner.m_backend->fill_all(m_fills);
  scrub_after_others();
}

void point_runner::timed_checks::scrub_after_others() {
  if (m_scrubs && m_runner.m_local_owner != this) {
    m_runner.m_backend->scrub_local_memory();
    m_runner.m_local_owner = this;
  }
}

void point_runner::timed_checks::after(const timed_sample& sample) {
  if (m_split && sample.launch_us.size() == m_batch.size())
    m_split_times.push_back(sample.launch_us);
  m_split = false;
  if (m_pending.empty()) return;
  m_runner.m_backend->synchronize();
  output_errors e;
  bool failed = false;
  for (const auto& c : m_pending) {
    const bool kept = c.answer != nullptr;
    if (kept &&
        m_runner.buffer_hashes(m_k, *c.set, hashed_buffers::outputs) == c.answer->verified) {
      continue;
    }
    output_errors one;
    if (kept) {
      m_runner.compare(m_k, *c.set, c.answer->expected, m_tolerances.atol, m_tolerances.rtol,
                       c.pattern, one);
    } else {
      compare_afresh(*c.set, c.seed, c.pattern, one);
    }
    failed = failed_set(one) || failed;
    e.wrong += one.wrong;
    e.unwritten += one.unwritten;
    e.first_wrong = std::min(e.first_wrong, one.first_wrong);
  }
  m_pending.clear();
  count_check(e, failed);
}

void point_runner::timed_checks::check_last(timed_kernel& k, bool cold) {
  if (m_kept.empty() || !checkable(k.batch)) return;
  m_last = true;
  (void)take_sample(*m_runner.m_backend, k, cold);
  m_last = false;
}

void point_runner::timed_checks::probe_other_sets(std::uint64_t s) {
  // Filled as a sample's sets are, and launched after what a sample's first launch follows.
  const auto fills_of = [&](std::size_t j, std::vector<fill_target>& into) {
    const std::uint64_t seed = batch_set_seed(s, j);
    m_runner.input_fills(m_k, *m_batch[j], seed, int(seed & 1), into);
  };
  m_fills.clear();
  for (std::size_t j = 0; j < m_batch.size(); ++j)
    fills_of(j, m_fills);
  m_runner.m_backend->fill_all(m_fills);
  scrub_after_others();
  // Held as a sample is, for as long as enqueueing a sample's batch holds it: what a unit of
  // the host's enqueueing took in recent samples, or else this launch's own.
  std::vector<double> per_launch(m_enqueue_us.begin(), m_enqueue_us.end());
  std::sort(per_launch.begin(), per_launch.end());
  (void)m_runner.m_backend->time_launches(kernel_role::candidate, [&] {
    const auto began = std::chrono::steady_clock::now();
    m_k.launch(*m_batch[0]);
    const double one =
        per_launch.empty()
            ? std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - began)
                  .count()
            : percentile_sorted(per_launch, 50);
    const double hold_us = std::min(k_most_probe_hold_us, one * double(m_batch.size()));
    const auto until = began + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   std::chrono::duration<double, std::micro>(hold_us));
    while (std::chrono::steady_clock::now() < until) {
    }
  });
  m_runner.m_backend->synchronize();
  ++m_probes;
  // The sets watched: up to k_probe_sets of the others, drawn (the first of a shuffle).
  std::vector<std::size_t> watched(m_batch.size() - 1);
  for (std::size_t j = 0; j < watched.size(); ++j)
    watched[j] = j + 1;
  for (std::size_t j = 0; j < k_probe_sets && j + 1 < watched.size(); ++j) {
    const std::size_t other = j + std::size_t(mix64((s ^ m_draw_key) + j) % (watched.size() - j));
    std::swap(watched[j], watched[other]);
  }
  watched.resize(std::min(watched.size(), k_probe_sets));
  // What their buffers hold now (inputs, outputs and scratch: none is the launch's to write),
  // then what their fills leave, made again: nothing of it came before the launch.
  std::vector<const buffer_set*> sets;
  for (const std::size_t j : watched)
    sets.push_back(m_batch[j]);
  const auto after = m_runner.buffer_hashes(m_k, sets, hashed_buffers::all);
  m_fills.clear();
  for (const std::size_t j : watched)
    fills_of(j, m_fills);
  m_runner.m_backend->fill_all(m_fills);
  const auto filled = m_runner.buffer_hashes(m_k, sets, hashed_buffers::all);
  for (std::size_t w = 0; w < watched.size(); ++w) {
    for (std::size_t i = 0; i < filled[w].size(); ++i) {
      if (after[w][i] == filled[w][i]) continue;
      const std::string& name = m_k.buffers()[i].name;
      if (std::find(m_other_sets_written.begin(), m_other_sets_written.end(), name) ==
          m_other_sets_written.end()) {
        m_other_sets_written.push_back(name);
      }
    }
  }
  // Its own answer, checked as a drawn sample's is (a launch that left its work to a later one
  // of the batch, which never came, answered nothing).
  const std::uint64_t seed = batch_set_seed(s, 0);
  output_errors e;
  compare_afresh(*m_batch[0], seed, int(seed & 1), e);
  count_check(e, failed_set(e));
}

bool point_runner::timed_checks::failed_set(const output_errors& e) {
  const bool norm_failed = !e.wrong && fails_norm_test(e, m_tolerances.rtol);
  if (norm_failed) m_norm_rel_err = std::max(m_norm_rel_err, norm_relative_error(e));
  return e.wrong || norm_failed;
}

void point_runner::timed_checks::count_check(const output_errors& e, bool failed) {
  ++m_checks;
  if (e.wrong && !m_wrong) {
    m_first_wrong = e.first_wrong;
    m_unwritten = e.unwritten;
  }
  if (failed) ++m_failed_checks;
  m_wrong += e.wrong;
}

void point_runner::timed_checks::report(verification_result& v) {
  canary_hits outside;
  m_runner.check_canaries(m_k, m_sets[0], outside);
  if (rotates()) m_runner.check_canaries(m_k, m_sets[1], outside);
  for (const auto& set : m_extra_sets)
    m_runner.check_canaries(m_k, set, outside);
  // The canaries verification found changed stay so: what is new is the timed launches'.
  const auto& found = v.written_out_of_bounds;
  for (auto* list : {&outside.buffers, &outside.before, &outside.after}) {
    std::erase_if(*list, [&](const std::string& name) {
      return std::find(found.begin(), found.end(), name) != found.end();
    });
  }
  if (!outside.empty()) {
    v.written_out_of_bounds.insert(v.written_out_of_bounds.end(), outside.buffers.begin(),
                                   outside.buffers.end());
    v.note += std::string(v.note.empty() ? "" : "; ") + "timed launches wrote " + outside.places();
  }
  if (!m_other_sets_written.empty()) {
    for (const auto& name : m_other_sets_written) {
      if (std::find(found.begin(), found.end(), name) == found.end()) {
        v.written_out_of_bounds.push_back(name);
      }
    }
    v.note += std::string(v.note.empty() ? "" : "; ") + "a launch wrote other launches' buffers (" +
              comma_joined(m_other_sets_written) +
              "): one launch doing the work of the batch's others would time each faster than "
              "it is";
  }
  v.timed_checks = m_checks;
  v.timed_wrong = m_wrong;
  v.timed_failed = m_failed_checks;
  v.batch_probes = m_probes;
  v.split_samples = int(m_split_times.size());
  if (m_split_times.size() >= std::size_t(k_min_split_samples)) judge_launches(v);
  if (!m_failed_checks) return;
  if (!v.note.empty()) v.note += "; ";
  v.note += "correct when verified, but " + std::to_string(m_failed_checks) + " of the " +
            std::to_string(m_checks) + " timed samples checked differ from the reference";
  if (m_wrong) {
    v.note += " in " + std::to_string(m_wrong) + " output elements (" +
              std::to_string(m_unwritten) + " never written; first at element " +
              std::to_string(m_first_wrong) + ")";
  } else {
    v.note += " in the norm-relative error (" + format_tolerance(m_norm_rel_err) + ")";
  }
}

bool point_runner::timed_checks::checkable(std::int64_t launches) const {
  return !m_kept.empty() && (launches == 1 || m_pure || !m_batch.empty());
}

std::optional<double> point_runner::timed_checks::sample_wall_ms() const {
  if (m_timed < 2) return std::nullopt;
  const double so_far =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - m_first_timed)
          .count();
  return so_far / double(m_timed - 1);
}

void point_runner::timed_checks::judge_launches(verification_result& v) {
  const std::size_t launches = m_split_times.front().size();
  launch_spread spread = spread_of_launches(m_split_times, 0);
  if (spread.ratio > k_uneven_launches) {
    // The sample's fixed cost, in its first launch, and how far honest launches as long as the
    // lower quartile's stray on this device after the same fills.
    device_backend& backend = *m_runner.m_backend;
    const double fixed = fixed_cost_us(backend, m_runner.m_fixed_cost);
    if (fixed > 0) spread = spread_of_launches(m_split_times, fixed);
    if (spread.ratio > k_uneven_launches) {
      v.builtin_excess_us = builtin_launch_excess_us(backend, std::int64_t(launches),
                                                     buffer_bytes(m_k), spread.quartile_us, fixed);
    }
  }
  v.launch_spread = spread.ratio;
  v.launch_excess_us = spread.excess_us;
  if (!uneven_launches(v)) return;
  const auto three = [](double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", x);
    return std::string(text);
  };
  v.note += std::string(v.note.empty() ? "" : "; ") +
            "in batched samples timed launch by launch, one launch of the batch took " +
            three(spread.ratio) + " times the lower quartile's time, " + three(spread.excess_us) +
            " µs more (medians over " + std::to_string(m_split_times.size()) +
            " samples; a built-in kernel's launches " + three(v.builtin_excess_us.value_or(0)) +
            " µs more at their slowest place): a launch doing the work of the batch's others "
            "would time each faster than it is";
}

double point_runner::timed_checks::probe_chance() const {
  if (m_probes < k_min_probes) return std::max(m_split_chance, 1 / k_probe_one_in);
  const double most = 1 / k_probe_one_in;
  const auto sample_ms = sample_wall_ms();
  if (!(m_probe_ms > 0) || !sample_ms) return most;
  return std::min(most, k_probe_share * *sample_ms / m_probe_ms);
}

double point_runner::timed_checks::afresh_share(std::int64_t launches) const {
  if (!(m_costs.check_ms > 0)) return 1;
  double sample_ms = double(launches) * m_costs.launch_ms;
  if (const auto so_far = sample_wall_ms()) sample_ms = std::max(sample_ms, *so_far);
  if (!(sample_ms > 0)) return 1;
  return std::min(1.0, k_afresh_share * double(k_check_one_in) * sample_ms / m_costs.check_ms);
}

void point_runner::timed_checks::compare_afresh(const buffer_set& set, std::uint64_t seed,
                                                int pattern, output_errors& e) {
  device_backend& backend = *m_runner.m_backend;
  const auto& buffers = m_k.buffers();
  const auto started = std::chrono::steady_clock::now();
  std::deque<device_buffer> aside;
  buffer_set kept(buffers.size(), nullptr);  // the kernel's outputs, set aside on the device
  if (m_screens) {
    try {
      for (std::size_t i = 0; i < buffers.size(); ++i) {
        if (!buffers[i].output) continue;
        aside.push_back(backend.allocate(buffers[i].bytes()));
        backend.copy(aside.back(), *set[i], buffers[i].bytes());
        kept[i] = &aside.back();
      }
    } catch (const backend_error& ex) {
      if (ex.kind() != fault_kind::out_of_memory) throw;
      aside.clear();  // no room for a copy: compared on the host
    }
  }
  answers left(buffers.size());
  auto read_left = [&](const buffer_set& from) {
    for (std::size_t i = 0; i < buffers.size(); ++i) {
      if (!buffers[i].output) continue;
      left[i].resize(buffers[i].bytes());
      backend.read(*from[i], 0, left[i].data(), buffers[i].bytes());
    }
  };
  if (aside.empty()) read_left(set);
  m_runner.init_inputs(m_k, set, seed, pattern);
  reference_run run = m_runner.run_reference(m_k, set);
  // What a check afresh costs from now on (afresh_share): what this one took.
  auto cost = [&] {
    m_costs.check_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
  };
  if (!aside.empty()) {
    if (screened(kept, run.outputs, e)) {
      m_runner.poison_answers(m_k, run);
      cost();
      return;
    }
    read_left(kept);
  }
  const answers expected = m_runner.read_answers(m_k, run);
  m_runner.compare(m_k, left, expected, m_tolerances.atol, m_tolerances.rtol, pattern, e);
  cost();
}

bool point_runner::timed_checks::screened(const buffer_set& outputs, const buffer_set& answers,
                                          output_errors& e) const {
  output_errors sums;
  for (std::size_t i = 0; i < m_k.buffers().size(); ++i) {
    const auto& b = m_k.buffers()[i];
    if (!b.output) continue;
    const auto s = m_runner.m_backend->screen_outputs(*outputs[i], *answers[i], b.type, b.count,
                                                      m_tolerances.atol, m_tolerances.rtol);
    if (!s || s->irregular) return false;
    sums.compared += std::uint64_t(b.count);
    sums.sum_sq_diff += s->sum_sq_diff;
    sums.sum_sq_ref += s->sum_sq_ref;
  }
  if (fails_norm_test(sums, m_tolerances.rtol)) return false;
  e.compared += sums.compared;
  e.sum_sq_diff += sums.sum_sq_diff;
  e.sum_sq_ref += sums.sum_sq_ref;
  return true;
}

void point_runner::timed_checks::batch_sets(std::int64_t launches) {
  while (2 + m_extra_sets.size() < std::size_t(launches)) {
    buffer_set set(m_k.buffers().size());
    for (std::size_t i = 0; i < m_k.buffers().size(); ++i) {
      m_extra.push_back(
          m_runner.m_backend->allocate_guarded(m_k.buffers()[i].bytes(), k_canary_bytes));
      set[i] = &m_extra.back();
    }
    m_runner.arm_canaries(m_k, set);
    m_extra_sets.push_back(std::move(set));
  }
  m_batch = {&m_sets[m_current], &m_sets[1 - m_current]};
  for (std::size_t j = 0; m_batch.size() < std::size_t(launches); ++j)
    m_batch.push_back(&m_extra_sets[j]);
}

}  // namespace kernelscan

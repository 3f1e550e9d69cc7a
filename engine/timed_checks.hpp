#pragma once
// The point runner's timed checks (point_runner::timed_checks), and what the runner and they
// share. Private to the point runner: only point_runner.cpp and timed_checks.cpp include it.

#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "engine/output_check.hpp"
#include "engine/point_kernel.hpp"
#include "engine/point_runner.hpp"
#include "engine/sample_loop.hpp"

namespace kernelscan {
namespace point_runner_parts {

constexpr double k_memory_headroom = 0.95;  // share of free memory a point may take
// A timed sample is drawn for a check with probability 1/k_check_one_in; the first
// k_max_drawn_checks drawn are checked on kept answers, the later ones afresh (the reference run
// after the sample) where that costs at most k_afresh_share of the sampled launches' time, and
// fewer of them where it costs more. One more sample after the last timed one is always checked.
constexpr std::uint64_t k_check_one_in = 8;
constexpr int k_max_drawn_checks = 2;
constexpr double k_afresh_share = 0.25;

struct tolerances {
  double atol, rtol;
};

// The spec's tolerances, or the default of the type outputs are compared in.
tolerances tolerances_of(const job_spec& spec, const point_kernel& k);
std::string format_tolerance(double v);
// Bytes of all of k's buffers: what init_inputs() writes.
std::uint64_t buffer_bytes(const point_kernel& k);

}  // namespace point_runner_parts

// The candidate's timed samples, made safe to trust (point_runner.hpp): two buffer sets used in
// turn, fresh inputs and poisoned outputs before every sample, randomly drawn samples and one
// after the last checked against the reference's answer for their inputs. A batched sample
// gives each of its launches a set of its own, with inputs of its own and poisoned outputs: on
// one set, every launch after the first would find the answer already written for the same
// inputs, and a kernel that returns early then (or replays what its globals kept) would time
// as fast per launch as the batch is long while its outputs stay right. Its before()/after()
// are the sample loop's hooks; next() is the set the next launch uses.
class point_runner::timed_checks {
 public:
  // `kept`: the answers verification kept (none where it did not pass: the point scores nothing
  // anyway, and there is nothing to check against; none for a baseline, which is only timed as
  // the candidate is). `scrubs`: whether the local memory is scrubbed before this kernel's
  // launches when another kernel's ran last (a candidate's, not the operator's baseline, which
  // gets inputs of its own and has nothing to find there).
  // `costs`: what verification found a check afresh to cost, which bounds how often one is drawn.
  timed_checks(point_runner& runner, point_kernel& k, const job_spec& spec, std::uint64_t seed,
               std::vector<kept_answer> kept, bool scrubs = true, check_costs costs = {});

  bool rotates() const { return !m_second.empty(); }
  // The most launches a sample may hold: one set of buffers each.
  std::int64_t max_batch() const { return m_max_batch; }
  // The set the next launch uses: the sample's one, or in a batch the launch's own.
  const buffer_set& next();

  // A drawn sample gets the inputs of a verification trial, whose answer is kept: no reference
  // runs while the kernel is timed. The kernel cannot know them for what they are: it runs from
  // a module loaded after verification, its unchecked samples get inputs no launch saw, and each
  // kept answer checks one sample at most (inputs it met in an earlier timed sample would tell
  // it a check). A drawn batch is checked on the set of one of its launches, drawn as well. The
  // last check, after timing, is prepared as any sample is and every launch of its batch is
  // checked (after()): one drawn set on the last kept answer, which no drawn check takes (so
  // that where the kernel's outputs hash as verified, nothing is read back), the others on
  // fresh inputs; nothing before it tells it. A batched sample of a kernel with kept answers is
  // preceded by a probe of its sets (probe_other_sets) with the probability probe_chance()
  // gives, drawn as checks are, and the last check always. Such a sample is split (timed launch
  // by launch, split()), drawn too (one in eight, more at first where the spec's fewest samples
  // are few), and the last check always.
  void before(std::int64_t launches, bool timed);

  // Whether the sample before() prepared is timed launch by launch: after() gets each launch's
  // time, and report() the spread of those times (verification_result::launch_spread). A kernel
  // that does the work of a batch's other launches in one of them (the whole batch's at its
  // first launch, keeping their answers in memory of its own for them to copy, or at its last,
  // the others doing nothing) writes nothing a check or a probe could fault, but that launch
  // takes the time the others were spared. Where the backend's marks are free (OpenCL's
  // profiling), nothing tells a split sample from any other; on a GPU each mark is an event
  // recorded between two launches.
  bool split() const { return m_split; }

  // A checked set whose outputs hash as the verified launch's on the same inputs left them
  // holds the same bits, which passed the same comparison: only one that differs (a kernel
  // whose bits vary from launch to launch, atomics for one, or a wrong one) is read back and
  // compared, element by element. A set checked without a kept answer (the last check's other
  // launches, a drawn check once the kept answers are spent) has its outputs set aside, its
  // inputs made again from their seed (as they were before the kernel, which may have written
  // them, ran) and the reference answer them. A sample with any set that fails is a failed check.
  void after(const timed_sample& sample);

  // One more sample of `k` (whose hooks are this object's) after the last timed one, checked: a
  // kernel that stops working after some number of timed launches fails it, whichever samples
  // were drawn. The sample loop takes it as soon as the samples stop (timed_kernel::last), as it
  // takes a sample (`cold`: flushed first), though its time is not kept.
  void check_last(timed_kernel& k, bool cold);

  // What the checks found, the canaries after every timed launch of either set, the buffers
  // of other sets one launch wrote (probe_other_sets), and the spread of split samples' launch
  // times (with a built-in kernel's on the device where it is uneven enough to ask).
  void report(verification_result& v);

 private:
  // A batch whose launches each have a set of their own is checked as a single launch is.
  bool checkable(std::int64_t launches) const;

  const buffer_set& current() const { return m_sets[m_current]; }

  // The share of drawn samples checked afresh once the kept answers are spent: all of them where
  // a check (as verification's trial cost, then as the last check afresh took) costs at most
  // k_afresh_share of a sample's time (its wall time so far, or the time
  // of its launches in verification, whichever is longer), fewer where it costs more (a slow
  // reference), so that checks go on through the whole of a run at a rate with no pattern the
  // kernel could learn.
  double afresh_share(std::int64_t launches) const;

  // The chance that a batched sample is preceded by a probe: 1/k_probe_one_in, or less where the
  // last probe's wall time against a sample's so far would make probes take more than
  // k_probe_share of the sampling's (on a GPU, a probe's hashes cost more than a hot sample);
  // until k_min_probes have run, a split sample's first chance if that is more (more where the
  // spec's fewest samples are few), so that a short run has several.
  double probe_chance() const;

  // The split samples' launch spread (verification_result::launch_spread), with how far honest
  // launches stray on the device where it asks.
  void judge_launches(verification_result& v);

  // A timed sample's wall time so far (ms): the time since the first began over the samples
  // begun before the one now beginning; none before a sample has ended.
  std::optional<double> sample_wall_ms() const;

  // The outputs the kernel left in `set` compared with the reference's answer for the inputs
  // `seed` and `pattern` make, the set made again for the reference as in verification. Where
  // the backend screens outputs on the device (device_backend::screen_outputs), the outputs are
  // set aside there and screened against the reference's answer where it lies: a few numbers
  // come back where a GPU would read both over the bus and the host compare them, so that a
  // check afresh costs about a reference run and checks come as often as they are drawn. What
  // the screen does not pass (an irregular element, the norm test), and every output where the
  // device cannot screen or set the outputs aside, is read back and compared on the host, which
  // decides: a screen passes nothing the host would fail, and fails nothing by itself.
  void compare_afresh(const buffer_set& set, std::uint64_t seed, int pattern, output_errors& e);

  // True where every output of `outputs` passes the screen against `answers` and together
  // they pass the norm test; their sums then go to `e`, as the host's comparison would add them.
  bool screened(const buffer_set& outputs, const buffer_set& answers, output_errors& e) const;

  // One launch of the sample's batch, alone, on its first set, its sets filled as before a
  // sample (inputs of seed `s`): the buffers of a few of the others, drawn, must still hold what
  // their fills left. A kernel that learned where a batch's sets lie (its globals keep addresses
  // from launch to launch) could do the whole batch's work in its first launch, one large launch
  // for many small ones, and let the others find their outputs written: right answers
  // everywhere, and a faster time per launch than it earned (or leave the others' answers in
  // their inputs or scratch, for a copy). Nothing before that launch tells it from a sample's
  // first: the probe comes where a sample's fills come, after what a sample follows, and
  // everything it reads or writes beyond them (the watched buffers hashed, filled again and
  // hashed) comes after the launch. A kernel able to read a clock would find anything more in
  // the time since its last launch (a probe after the last check would follow the comparison
  // of a whole batch), and so the launch is held as a sample's first is: enqueued behind the
  // backend's hold of its queue (time_launches), which is released once the host has taken as
  // long as enqueueing the sample's whole batch takes it. Its time is not kept. The buffers it
  // wrote are what report() says; its own set is checked afresh, as a drawn sample's is (a checked
  // sample): a kernel that leaves a launch's work to a later launch of its batch (at a place it
  // draws from sample to sample, so that no one place of the batch takes longer in most samples,
  // which the split samples would show) answers nothing there.
  void probe_other_sets(std::uint64_t s);

  // Whether the outputs compared in `e` fail (elementwise, or by the norm test, whose error is
  // then kept for the note), and a checked sample counted with the errors of its sets, `e`.
  bool failed_set(const output_errors& e);
  void count_check(const output_errors& e, bool failed);

  // Local memory is scrubbed before the kernel's first timed launch (after verification's, which
  // may have kept something there across the fresh module) and after another variant's launches
  // (which got the same inputs). Between its own samples the kernel could only find what it
  // left itself, as it can in its global variables: each scrub cost more than a microsecond
  // kernel on a CPU device (512 KiB per thread on PoCL), and took the caches with it.
  void scrub_after_others();

  // m_batch: `launches` sets, the sample's own first, allocating (and arming the canaries of)
  // the ones beyond the two the kernel alternates.
  void batch_sets(std::int64_t launches);

  point_runner& m_runner;
  point_kernel& m_k;
  std::uint64_t m_seed;
  std::vector<kept_answer> m_kept;
  point_runner_parts::tolerances m_tolerances;
  bool m_scrubs = true;
  check_costs m_costs;
  // Which samples are drawn for a check or a probe, which launch of a drawn batch is checked,
  // and which sets a probe watches: from the point's draw key (point_runner.hpp), not its seed.
  std::uint64_t m_draw_key;
  std::uint64_t m_timed = 0;  // timed samples begun, and when the first began
  std::chrono::steady_clock::time_point m_first_timed;
  int m_probes = 0;
  double m_probe_ms = 0;  // the last probe's wall time
  double m_split_chance = 0;
  bool m_split = false;                            // the sample being taken is split
  std::vector<std::vector<double>> m_split_times;  // each split sample's launch times (µs)
  bool m_pure = true;
  bool m_screens = false;  // the backend screens every output on the device (compare_afresh)
  std::vector<device_buffer> m_second;
  buffer_set m_sets[2];
  int m_current = 0;
  std::int64_t m_max_batch = 1;
  std::deque<device_buffer> m_extra;  // the buffers of the sets beyond two (a deque: stable)
  std::vector<buffer_set> m_extra_sets;
  std::vector<fill_target> m_fills;        // a sample's fills, all its sets' in one fill_all()
  std::vector<const buffer_set*> m_batch;  // the sets of this sample's launches, when batched
  std::int64_t m_launch = 0;
  // When the running batched sample's first launch was enqueued, and what enqueueing one launch
  // of a batch took the host in the last unsplit batched samples (µs): a probe holds the queue
  // as long as a sample's batch does (probe_other_sets).
  std::chrono::steady_clock::time_point m_enqueue_began;
  std::deque<double> m_enqueue_us;
  std::uint64_t m_samples = 0;
  bool m_last = false;
  int m_drawn = 0;
  // The sets the running sample is checked on: with a kept answer (drawn checks), or with the
  // seed and pattern of the fresh inputs the reference answers after the sample (the last).
  struct pending_check {
    const buffer_set* set;
    const kept_answer* answer;
    std::uint64_t seed;
    int pattern;
  };
  std::vector<pending_check> m_pending;
  std::vector<std::string> m_other_sets_written;  // buffers of other sets a launch wrote
  int m_checks = 0, m_failed_checks = 0;
  double m_norm_rel_err = 0;
  std::uint64_t m_wrong = 0, m_unwritten = 0, m_first_wrong = 0;
};

}  // namespace kernelscan

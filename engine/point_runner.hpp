#pragma once
// The engine every backend runs through (DESIGN.md §3, §4): measures a sweep point on a
// device_backend. In order: resolve the point's kernels (candidate, and the fitness baseline when
// the job has one); check that their buffers fit the device; allocate and compile them
// (point_kernel); verify the candidate against its reference for `verify.trials` fresh seeded
// inputs; initialise timing inputs; sample the kernels interleaved (sample_loop); analyse the
// result. Problems of the point (a compile error, out of memory, a refused launch, a fault)
// become a failed row with its error type; after a fault that leaves the device unusable,
// needs_restart() is true and the worker is replaced.
//
// Verification, per trial: inputs get fresh seeded values and outputs the unwritten pattern;
// the reference runs first, on the same inputs and its own copies of the outputs, and its answer
// is read back to the host and its copies poisoned and freed; then the kernel runs (timed, as a
// sample is) and its outputs are compared with that answer chunk by chunk (output_check.hpp),
// element by element and by their norm-relative error. Local memory is scrubbed before the
// kernel's launch (and before its first timed sample, and after another variant's); its inputs are
// hashed around the first and the last trial's launch (input_modified) and the canary regions
// before and after every buffer checked (out_of_bounds_write). The number of trials varies with the
// point's seed, between verify.trials and two more; after them the kernel is loaded afresh (its
// globals back to their initial values) for timing.
//
// Timing, on a backend that runs device code: the kernel's launches alternate between two
// buffer sets at different addresses (one set where the device has no room for a second), and
// before every sample, untimed, the set's inputs get fresh seeded values and its outputs an
// unwritten pattern, so that no launch can reuse an earlier answer or tell a timed launch from
// a verified one. Randomly drawn timed samples, all through the run, and one more after the last
// timed sample are checked. The first two drawn and the last check get the inputs of one of the
// last verification trials each, a different one each time (the last check's is its own),
// whose reference answer verification kept (in a batch, one launch of it, drawn too), and their
// outputs are compared with that answer after they ran (where they hash as the verified launch
// on those inputs left them, they are the bits that passed, and are not read back). Later drawn
// samples (as often as a quarter of the sampling's time allows) and the last check's other
// launches get fresh inputs, as an unchecked sample does, and the reference answers them after
// the sample (the inputs made again from their seeds): the last check covers every launch of
// its batch. A mismatch is `timed_output_mismatch`. So no reference
// runs between a sample's inputs and its launches, and the kernel cannot tell a checked sample:
// its module was loaded after verification, so it has seen none of a kept check's inputs before,
// not even in an earlier timed sample, and nothing runs before a checked sample that does not
// run before every sample.
// A timed median far below the kernel's verification launches is `faster_than_verification`.
//
// Variants (a job with job_spec::variants): measure_all() measures every variant of the point
// on this device, interleaved sample by sample (A/B/C/A/B/C...) so that drift affects them
// alike; each runs the same verification and timed checks a single kernel does, with inputs from
// the same seeds, and one that does not compile or fails gets a failed row of its own while the
// others are measured. Each row carries its speedups over the slowest variant of the point and
// over the baseline variant, from the paired samples.
//
// Threading: one thread (the worker's). Owns its backend.

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "engine/analysis.hpp"
#include "engine/answer_mask.hpp"
#include "engine/device_backend.hpp"
#include "engine/engine.hpp"
#include "engine/host_blocks.hpp"
#include "engine/output_check.hpp"
#include "engine/point_kernel.hpp"
#include "engine/sample_loop.hpp"

namespace kernelscan {

// Where the wall time of the runner's last measure() went, in milliseconds (after a point
// measured with variants, only verification's reference, hashes and compare, summed over the
// variants). What the defences cost a point shows here: bench_defences prints it beside a plain
// runner's.
struct point_phases {
  double setup = 0;         // resolving, allocating and compiling the kernels
  double verification = 0;  // all of it, of which:
  double reference = 0;     //   the reference's answers (copies, launch, read back, poisoned)
  double hashes = 0;        //   the input hashes around the trials' launches, the outputs' of
                            //   the trials kept for checked samples
  double compare = 0;       //   comparing the outputs with the answers
  double preparation = 0;   // fresh module, timing inputs, the second buffer set
  double sampling = 0;      // warm-up, batch decision and sampling, of which:
  double hooks = 0;         //   the hooks between samples (fresh inputs, checked samples)
  double checks = 0;        // the last checked sample and the canaries after sampling
  double probes = 0;        // the probes of a batch's sets, in the hooks and the checks
  double total = 0;
};

class point_runner : public engine {
 public:
  // `defences` false measures as a runner without its defences against gamed scores would: the
  // trials verify.trials asks for, no input hashes, canaries, poisoned reference copies or
  // fresh module, and timed launches on one buffer set whose inputs are never refreshed or
  // checked. Only the benchmark of what the defences cost uses it (bench_defences).
  explicit point_runner(std::unique_ptr<device_backend> backend, bool defences = true);
  ~point_runner() override;

  const device_info& device() const override { return m_info; }
  point_result measure(const job_plan& plan, std::uint64_t index, std::uint64_t seed) override;
  // With variants: every variant of the point measured side by side (measure_variants).
  std::vector<point_result> measure_all(const job_plan& plan, std::uint64_t index,
                                        std::uint64_t seed) override;
  measured_roofline measure_roofline() override;
  void set_roofline(const measured_roofline& roofline) override;
  bool needs_restart() const override { return !m_backend->usable(); }

  device_backend& backend() { return *m_backend; }
  const point_phases& last_phases() const { return m_phases; }
  // At most `launches` launches in a hot sample of any kernel (0: as many as the batch decision
  // and the buffer sets allow). Only the benchmark of what the defences cost uses it, to time a
  // runner without them at the batch the defended runner could take (bench_defences).
  void limit_batch(std::int64_t launches) { m_batch_limit = launches; }
  // The share of the device's caches a batch's buffer sets may take (by default half). Only
  // bench_defences changes it, to measure what the sets' footprint costs a hot launch.
  void share_caches_with_sets(double share) { m_sets_cache_share = share; }
  // Each timed sample of a kernel that rotates its buffer sets begins with an untimed launch of it
  // on the set the last sample timed, before the fresh inputs are written: whether a sample's
  // first launch pays for following other kernels (the fills) rather than its own launches. Only
  // bench_defences uses it. The runner does not: a kernel could do in such launches the part of
  // its work that does not depend on its inputs (zeroing its own scratch, say).
  void prime_each_sample(bool prime) { m_prime_samples = prime; }

 private:
  class timed_checks;                       // engine/timed_checks.hpp
  using answers = std::vector<host_bytes>;  // per buffer; empty for non-outputs
  // The reference's answer for a verification trial's inputs, which init_inputs(seed, pattern)
  // makes again.
  struct kept_answer {
    std::uint64_t seed = 0;
    int pattern = 0;
    answers expected;
    // A hash of each output as the kernel's verified launch on these inputs left it (0 for the
    // other buffers): a checked sample whose outputs hash alike holds the same bits, which passed.
    std::vector<std::uint64_t> verified;
  };
  // The reference's answers of a point's trials, by point_kernel::reference_key() and the
  // trial's seed and pattern: variants with the same reference take them from the first.
  struct shared_answers {
    std::map<std::string, answers> by_key;
    std::uint64_t bytes = 0;
    double reference_ms = 0;  // the latest of the reference's runs
  };

  void check_memory(double need, const std::string& what);
  // Fresh inputs from `seed` in `k`'s buffers (or in `set`, buffers of the same shapes); outputs
  // hold unwritten pattern `pattern` (element.hpp).
  void init_inputs(point_kernel& k, std::uint64_t seed, int pattern = 0);
  void init_inputs(point_kernel& k, const buffer_set& set, std::uint64_t seed, int pattern);
  // The fills init_inputs() enqueues, added to `into` (a batched sample's sets are filled at once).
  void input_fills(point_kernel& k, const buffer_set& set, std::uint64_t seed, int pattern,
                   std::vector<fill_target>& into);
  // The reference run on the inputs now in `set`, on its own copies of the outputs in their state
  // now: its answer is in the clear in `outputs` (set's buffers, the copies for its outputs)
  // until read_answers() or poison_answers().
  struct reference_run {
    std::deque<device_buffer> copies;
    buffer_set outputs;
  };
  reference_run run_reference(point_kernel& k, const buffer_set& set);
  // The run's answer, masked on the device and read to the host (empty for non-outputs); the
  // copies are poisoned after (with the defences).
  answers read_answers(point_kernel& k, reference_run& run);
  // The run's answer poisoned where it lies (with the defences), unread.
  void poison_answers(point_kernel& k, reference_run& run);
  // run_reference() and read_answers(): the reference's answer for the inputs now in `set`, on
  // the host. The copies are freed before returning.
  answers reference_answers(point_kernel& k, const buffer_set& set);
  // Buffers whose canaries changed: all of them once each, in the order found (what
  // verification.written_out_of_bounds lists), and those written before their start and past
  // their end (what its note says).
  struct canary_hits {
    std::vector<std::string> buffers, before, after;
    bool empty() const { return buffers.empty(); }
    // "before the start of x and past the end of x, y"
    std::string places() const;
  };
  // The canary pattern of the point (from its seed), and the canary regions before and after the
  // buffers of `set` (point_kernel.hpp) filled with it / checked, the buffers whose canaries
  // changed added to `hits` (once each).
  void begin_canaries(std::uint64_t point_seed);
  void arm_canaries(point_kernel& k, const buffer_set& set);
  void check_canaries(point_kernel& k, const buffer_set& set, canary_hits& hits);
  // Both guards of every buffer of `set` that has storage, written and read in one batch each;
  // `owners`, where given, gets the index of each guard's buffer.
  std::vector<guard_ref> guards_of(point_kernel& k, const buffer_set& set,
                                   std::vector<std::size_t>* owners = nullptr) const;
  // A hash of each buffer of `set` that is an input (not an output, not scratch), of each
  // output, or of every buffer (scratch too); 0 for the others. One entry per buffer.
  enum class hashed_buffers { inputs, outputs, all };
  std::vector<std::uint64_t> buffer_hashes(point_kernel& k, const buffer_set& set,
                                           hashed_buffers which);
  // The same for several sets, hashed in one batch (device_backend::hash_all): one list a set.
  std::vector<std::vector<std::uint64_t>> buffer_hashes(point_kernel& k,
                                                        std::span<const buffer_set* const> sets,
                                                        hashed_buffers which);
  // Compares the outputs in `set` with `expected`; they held unwritten pattern `pattern`.
  void compare(point_kernel& k, const buffer_set& set, const answers& expected, double atol,
               double rtol, int pattern, output_errors& e);
  // The same for outputs already on the host (`outputs`, per buffer; empty for non-outputs).
  void compare(point_kernel& k, const answers& outputs, const answers& expected, double atol,
               double rtol, int pattern, output_errors& e);
  // Where a comparison finds `bytes` of output buffer `buffer` from byte `offset` on: read into
  // the chunk buffer `slot` (of two, one read while the other is compared), or where they lie.
  using output_chunks = std::function<const unsigned char*(std::size_t buffer, std::uint64_t offset,
                                                           std::size_t bytes, int slot)>;
  void compare_chunks(point_kernel& k, const output_chunks& outputs, const answers& expected,
                      double atol, double rtol, int pattern, output_errors& e);
  // What checking a sample against the reference run afresh costs beside the kernel's launch, as
  // verification found them (milliseconds): the reference and the comparison of a trial.
  struct check_costs {
    double launch_ms = 0;
    double check_ms = 0;
  };
  // Verifies `k` for the trials `spec` asks; the answers of its last trials go to `kept` (the
  // checked timed samples' inputs and answers), where given, and only when it passed; what a
  // check costs to `costs`, where given.
  verification_result verify(point_kernel& k, const job_spec& spec, std::uint64_t seed,
                             std::vector<kept_answer>* kept = nullptr,
                             shared_answers* shared = nullptr, check_costs* costs = nullptr);
  // The variants of a job measured side by side (DESIGN.md §4, README "Variants"): each is
  // resolved, compiled and verified on its own, so one that fails fails its row only; every
  // variant's inputs come from the same seeds, so each is checked against the reference's
  // answer for the same inputs; then the survivors are sampled in rotation (A/B/C/A/B/C...,
  // each with its own timed checks) and compared pairwise from those samples.
  std::vector<point_result> measure_variants(const job_plan& plan, std::uint64_t index,
                                             std::uint64_t seed);
  // Fills the timing and environment of a row that sampled; after its analysis, the advice on
  // how it was sampled (`rotated`: the timed launches alternated two buffer sets).
  void fill_sampled(point_result& r, const sampling_result& s, const timed_kernel& k);
  void add_sampling_advice(point_result& r, const sampling_result& s, bool rotated);

  std::unique_ptr<device_backend> m_backend;
  device_info m_info;
  analysis_context m_analysis;
  std::vector<unsigned char> m_canary;  // this point's canary pattern
  bool m_defences = true;
  std::int64_t m_batch_limit = 0;
  double m_sets_cache_share = 0.5;
  bool m_prime_samples = false;
  fixed_cost_memo m_fixed_cost;  // the device's, kept between points
  // The point's draw key, from the system's entropy for each point: which timed samples are
  // checked (and which launch of a batch), which batched samples a probe precedes and which sets
  // it watches come from it, not from the point's seed, and every variant of the point draws alike.
  // A job's seed is its own to choose, and a framework that fixes it so that its inputs repeat
  // would otherwise fix the checked samples too: a schedule that a kernel evolved against it could
  // learn to work around.
  std::uint64_t m_draw_key = 0;
  // Bandwidths measured again (GB/s) by working-set bytes.
  std::map<std::uint64_t, kept_measurement> m_bandwidth_again;
  std::optional<kept_measurement> m_vector_peak_again;
  // With the defences, the reference's answers are kept on the host XORed with the stream of a
  // key drawn at random when the runner starts: a kernel that shares the worker's address space
  // (a CPU device) finds no plaintext answer to copy, and one it overwrote unmasks as noise.
  // Each comparison unmasks a chunk at a time. Without: kept as they are.
  std::optional<answer_mask> m_mask;
  // The timed kernel whose launches ran last with the point's timed checks (timed_checks::before):
  // local memory may hold what they left, which is its own business but not another variant's.
  const timed_checks* m_local_owner = nullptr;
  // The host blocks of the reference's answers, recycled from point to point.
  host_block_cache m_host_blocks;
  point_phases m_phases;
  // compare()'s windows of the outputs read back (one read while the other is compared), kept
  // from comparison to comparison: a fresh one costs the host a page fault every 4 KiB.
  std::vector<unsigned char> m_chunk_read[2];
};

// Error types of failed points, from what a measurement threw.
std::string point_error_type(fault_kind kind);

}  // namespace kernelscan

// What the defences against gamed scores cost an honest kernel, on the first OpenCL device (PoCL's
// CPU device where there is no GPU) or, in a GPU build, on GPU 0 through the GPU engine, in one
// run: three point runners on the same device, one
// with the defences (extra verification trials, input hashes, canaries, poisoned reference
// copies, a fresh module for timing, two rotating buffer sets refreshed and poisoned before every
// sample, checked timed samples) and two without, measure the same points in rounds (the order
// rotates every round, so drift of the machine affects all alike). Printed per kernel: the
// defended and the first plain runner's timed median (the median over rounds of the point's
// median) and their ratio (target: within 1%), and the wall time per point (target: the defences
// add at most 20%); each beside the control, the second plain runner against the first, which
// shows how far two identical runners read apart in the same run. A hot batch of the defended
// runner holds no more launches than it has buffer sets in half the caches, where the plain
// runner's launches share one set: a fourth runner, plain and held to the defended runner's batch
// of the same round, gives the median the defences' own work accounts for ("at its batch", over
// the defended runner's median before the correction below). A
// batched sample's per-launch time carries the sample's own fixed cost (the events around the
// launches, the first launch's ramp, the last one's drain) divided by the batch, so a batch held
// to two reads that cost more than one of nine. The runner reads such a held batch as the free
// batch would read it, with the fixed cost it measures on the device with a built-in kernel
// (sample_loop.hpp; the defended median above is that corrected figure). For each hot case two
// more runners, a defended and a plain one held to one launch a sample (uncorrected, as a batch
// held by the runner's limit is), give each runner's time per launch without it, the slope
// (b * median at batch b - median at batch 1) / (b - 1) from the defended runner's uncorrected
// median, their ratio, the fixed cost per sample each implies beside the one the device's
// built-in kernel showed, and the defended runner's figure had its own fixed cost been shared by
// the plain runner's batch, over the plain runner's median; and a last runner, defended with its
// buffer sets in a quarter of the caches rather than half, over the plain median, with its
// batch: what the sets' footprint in the caches costs a launch. Then, per kernel, where the
// defended and the first plain runner's wall time went (point_phases, median over rounds), how
// many samples each took and the batches.
//
//   build/tests/bench/bench_defences [rounds] [opencl|hip]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/job_spec_codec.hpp"
#include "engine/job_plan.hpp"
#include "engine/opencl/opencl_backend.hpp"
#include "engine/point_runner.hpp"
#if defined(KERNELSCAN_HAVE_GPU)
#include "engine/hip/hip_engine.hpp"
#endif
#include "tests/support/axpy_spec.hpp"

namespace {

using kernelscan::json;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct bench_case {
  const char* name;
  json spec;
};

// An honest custom kernel checked against a STREAM triad, cold and, at a size whose launches
// take microseconds, hot (batched launches, where the defences' work between samples weighs
// most); and the builtin tiled GEMM. On a GPU, sizes a GPU takes as long over (hot, one whose
// buffer sets cap its batch and one whose sets do not), and the GEMM library's f16 GEMM beside
// the builtin one.
std::vector<bench_case> cases(bool gpu) {
  const json cold = {{"l2", "cold"}, {"max_time_ms", 400}};
  const json hot = {{"l2", "hot"}, {"max_time_ms", 400}};
  auto gemm = [](int size, const char* type, const char* impl) {
    return json{{"op", "gemm"}, {"m", size},     {"n", size},
                {"k", size},    {"dtype", type}, {"impl", impl}};
  };
  if (gpu) {
    const json axpy = kernelscan::testing::hip_axpy_kernel();
    return {
        {"axpy (custom, N=2^24)",
         {{"kernel", axpy}, {"sweep", {{"N", {16777216}}}}, {"timing", cold}}},
        {"axpy hot (N=2^20)", {{"kernel", axpy}, {"sweep", {{"N", {1048576}}}}, {"timing", hot}}},
        // Sets of 0.75 MiB: as many fit half an L2 of 50 MiB as the batch takes.
        {"axpy hot (N=2^16)", {{"kernel", axpy}, {"sweep", {{"N", {65536}}}}, {"timing", hot}}},
        {"gemm (builtin, 2048^3)", {{"kernel", gemm(2048, "f32", "builtin")}, {"timing", cold}}},
        {"gemm (library f16, 4096^3)",
         {{"kernel", gemm(4096, "f16", "library")}, {"timing", cold}}}};
  }
  const json axpy = kernelscan::testing::opencl_axpy_kernel();
  return {{"axpy (custom, N=2^22)",
           {{"kernel", axpy}, {"sweep", {{"N", {4194304}}}}, {"timing", cold}}},
          {"axpy hot (N=2^14)", {{"kernel", axpy}, {"sweep", {{"N", {16384}}}}, {"timing", hot}}},
          // Sets of 12 KiB: a batch of dozens of them, each refreshed before every sample.
          {"axpy hot (N=2^10)", {{"kernel", axpy}, {"sweep", {{"N", {1024}}}}, {"timing", hot}}},
          {"gemm (builtin, 256^3)", {{"kernel", gemm(256, "f32", "builtin")}, {"timing", cold}}}};
}

std::unique_ptr<kernelscan::engine> make_engine(const std::string& engine, bool defences) {
#if defined(KERNELSCAN_HAVE_GPU)
  const char* engines = "opencl, hip";
  if (engine == "hip") return kernelscan::make_hip_engine(0, defences);
#else
  const char* engines = "opencl";
#endif
  if (engine == "opencl") return kernelscan::make_opencl_engine(0, defences);
  throw std::invalid_argument("no engine \"" + engine + "\" in this build (" + engines + ")");
}

// One runner's rounds of a kernel: the phases of each point and its samples.
struct phase_rounds {
  std::vector<kernelscan::point_phases> phases;
  std::vector<double> samples;
  std::vector<double> batches;
  std::vector<double> checks;  // timed samples checked against the reference
  std::vector<double> probes;  // probes of a batch's sets
  // Samples timed launch by launch, and where there were enough, their spread, its excess and
  // how far the built-in kernel's launches strayed (where the spread asked).
  std::vector<double> splits, spread, excess, builtin;
};

// "  on: setup 1.0, verification 2.0 (...) ..." in milliseconds, medians over the rounds.
void print_phases(const char* who, const phase_rounds& p) {
  auto med = [&](double kernelscan::point_phases::*field) {
    std::vector<double> v;
    for (const auto& x : p.phases)
      v.push_back(x.*field);
    return median(v);
  };
  using kernelscan::point_phases;
  std::printf(
      "  %-4s setup %7.1f | verification %7.1f (reference %6.1f, hashes %5.1f, compare %6.1f) | "
      "preparation %6.1f | sampling %7.1f (hooks %6.1f, %4.0f samples, batch %3.0f, %3.0f checked, "
      "%2.0f probes: %5.1f) | checks %6.1f | total %7.1f ms\n",
      who, med(&point_phases::setup), med(&point_phases::verification),
      med(&point_phases::reference), med(&point_phases::hashes), med(&point_phases::compare),
      med(&point_phases::preparation), med(&point_phases::sampling), med(&point_phases::hooks),
      median(p.samples), median(p.batches), median(p.checks), median(p.probes),
      med(&point_phases::probes), med(&point_phases::checks), med(&point_phases::total));
  if (p.spread.empty()) return;
  std::printf("       %3.0f samples timed launch by launch: spread %5.2f, excess %6.2f us",
              median(p.splits), median(p.spread), median(p.excess));
  if (!p.builtin.empty())
    std::printf(", built-in %6.2f us (%zu of %zu points)", median(p.builtin), p.builtin.size(),
                p.spread.size());
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  const std::string engine = argc > 2 ? argv[2] : "opencl";
  // The runners: [0] with the defences, [1] without, and [2] another without, the control: how
  // far two runners that do exactly the same read apart in this run (where their buffers landed,
  // drift) is the noise against which the defended runner's ratio is read; [3] without, its
  // batches held to [0]'s; [4] with and [5] without, one launch a sample, [6] with, its sets in a
  // quarter of the caches, and [7] with, each sample begun by an untimed launch of the kernel
  // (hot cases only).
  constexpr int k_runners = 8;
  const auto defended = [](int i) { return i == 0 || i == 4 || i == 6 || i == 7; };
  std::unique_ptr<kernelscan::engine> runners[k_runners];
  try {
    for (int i = 0; i < k_runners; ++i)
      runners[i] = make_engine(engine, defended(i));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_defences: no %s device: %s\n", engine.c_str(), e.what());
    return 1;
  }
  std::printf("device: %s; %d rounds, the order of the first three runners rotated every round\n",
              runners[0]->device().name.c_str(), rounds);
  std::printf("%-28s %12s %12s %7s %7s %12s %12s %7s %7s %14s %7s\n", "kernel", "median on",
              "median off", "ratio", "control", "wall/pt on", "wall/pt off", "ratio", "control",
              "off, on's batch", "ratio");
  const std::vector<bench_case> all = cases(engine == "hip");
  std::vector<std::pair<const char*, phase_rounds[2]>> where(all.size());
  for (const int i : {4, 5})
    dynamic_cast<kernelscan::point_runner&>(*runners[i]).limit_batch(1);
  dynamic_cast<kernelscan::point_runner&>(*runners[6]).share_caches_with_sets(0.25);
  dynamic_cast<kernelscan::point_runner&>(*runners[7]).prime_each_sample(true);
  // Per hot case: the slope of each runner in each round, and the fixed cost per sample.
  struct slope_rounds {
    const char* name;
    std::vector<double> slope[2], fixed[2], single[2];
    // The fixed cost the defended runner measured with the device's built-in kernel (0 where it
    // corrected nothing).
    std::vector<double> device_fixed;
    // The defended runner's time per launch as at the plain runner's batch (its slope plus its
    // fixed cost divided by that batch), over the plain runner's median.
    std::vector<double> normalised;
    // The runner with its sets in a quarter of the caches: its median over the plain one's, and
    // its batch.
    std::vector<double> quarter, quarter_batch;
    // The runner whose samples begin with a launch of the kernel: its median over the plain one's.
    std::vector<double> primed;
  };
  std::vector<slope_rounds> slopes;
  std::size_t case_index = 0;
  for (const auto& c : all) {
    auto& [where_name, phases] = where[case_index++];
    where_name = c.name;
    const auto limits = kernelscan::spec_limits::stored();
    const auto plan =
        kernelscan::compile_plan(kernelscan::parse_job_spec(c.spec, limits), limits.plan);
    const bool hot = c.spec["timing"].value("l2", "") == "hot";
    std::vector<double> medians[k_runners], walls[k_runners], batches[2];
    // The defended runner's median before the correction of its held batch.
    std::vector<double> raw_on;
    if (hot) slopes.push_back({c.name, {}, {}, {}, {}, {}, {}, {}, {}});
    for (int round = 0; round < rounds; ++round) {
      for (int turn = 0; turn < (hot ? k_runners : 4); ++turn) {
        // The three rotate; the fourth follows, held to the batch the defended one just took.
        const int i = turn < 3 ? (round + turn) % 3 : turn;
        if (i == 3) {
          dynamic_cast<kernelscan::point_runner&>(*runners[3])
              .limit_batch(std::int64_t(batches[0].back()));
        }
        const auto start = std::chrono::steady_clock::now();
        const auto r = runners[i]->measure(plan, 0, 1000 + std::uint64_t(round));
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        if (r.status != kernelscan::point_status::ok || !r.time_us) {
          std::fprintf(stderr, "bench_defences: %s failed: %s\n", c.name,
                       r.error ? r.error->message.c_str() : "no time");
          return 1;
        }
        if (defended(i) && !r.flags.empty()) {
          std::fprintf(stderr, "bench_defences: the honest %s was flagged %s (%s)\n", c.name,
                       r.flags.front().c_str(), r.verification.note.c_str());
          return 1;
        }
        medians[i].push_back(r.time_us->median);
        walls[i].push_back(ms);
        const double correction = r.batch_corrected ? r.batch_corrected->us : 0;
        if (i == 0) {
          raw_on.push_back(r.time_us->median + correction);
          if (hot)
            slopes.back().device_fixed.push_back(
                r.batch_corrected ? r.batch_corrected->fixed_cost_us : 0);
        }
        if (i == 6) slopes.back().quarter_batch.push_back(double(r.batch));
        if (i < 2) {
          phases[i].phases.push_back(
              dynamic_cast<const kernelscan::point_runner&>(*runners[i]).last_phases());
          phases[i].samples.push_back(double(r.samples));
          phases[i].batches.push_back(double(r.batch));
          phases[i].checks.push_back(double(r.verification.timed_checks));
          phases[i].probes.push_back(double(r.verification.batch_probes));
          phases[i].splits.push_back(double(r.verification.split_samples));
          const auto& v = r.verification;
          if (v.launch_spread) phases[i].spread.push_back(*v.launch_spread);
          if (v.launch_excess_us) phases[i].excess.push_back(*v.launch_excess_us);
          if (v.builtin_excess_us) phases[i].builtin.push_back(*v.builtin_excess_us);
          batches[i].push_back(double(r.batch));
        }
      }
      if (!hot) continue;
      // This round's slope of the defended [0] against [4] and of the plain [1] against [5].
      for (int j = 0; j < 2; ++j) {
        const double b = batches[j].back(), at_b = j == 0 ? raw_on.back() : medians[j].back();
        const double single = medians[j == 0 ? 4 : 5].back();
        const double slope = b > 1 ? (b * at_b - single) / (b - 1) : at_b;
        slopes.back().slope[j].push_back(slope);
        slopes.back().fixed[j].push_back(single - slope);
        slopes.back().single[j].push_back(single);
      }
      const double on_slope = slopes.back().slope[0].back();
      const double on_fixed = slopes.back().fixed[0].back();
      slopes.back().normalised.push_back((on_slope + on_fixed / batches[1].back()) /
                                         medians[1].back());
      slopes.back().quarter.push_back(medians[6].back() / medians[1].back());
      slopes.back().primed.push_back(medians[7].back() / medians[1].back());
    }
    double m[4], w[4];
    for (int i = 0; i < 4; ++i) {
      m[i] = median(medians[i]);
      w[i] = median(walls[i]);
    }
    std::printf(
        "%-28s %9.1f us %9.1f us %7.3f %7.3f %9.1f ms %9.1f ms %7.3f %7.3f %11.1f us %7.3f\n",
        c.name, m[0], m[1], m[0] / m[1], m[2] / m[1], w[0], w[1], w[0] / w[1], w[2] / w[1], m[3],
        median(raw_on) / m[3]);
  }
  if (!slopes.empty()) {
    std::printf(
        "\nhot cases: time per launch without the fixed cost of a sample, the slope between batch "
        "1 and the runner's batch (the defended one uncorrected), the fixed cost each implies "
        "and the one the device's built-in kernel showed, the defended runner's figure as at "
        "the plain runner's batch with its own fixed cost over the plain median, and the "
        "defended runner with its sets in a quarter of the caches, and the one whose samples "
        "begin with an untimed launch of the kernel (before their fills), over the plain median "
        "(medians over rounds)\n"
        "%-28s %12s %12s %12s %12s %7s %10s %10s %10s %12s %12s %11s\n",
        "kernel", "batch 1 on", "batch 1 off", "slope on", "slope off", "ratio", "fixed on",
        "fixed off", "device", "as at off's", "on, 1/4 L2", "on, primed");
    for (const auto& s : slopes) {
      const double on = median(s.slope[0]), off = median(s.slope[1]);
      std::printf(
          "%-28s %9.2f us %9.2f us %9.2f us %9.2f us %7.3f %7.2f us %7.2f us %7.2f us %12.3f "
          "%6.3f (b%3.0f) %11.3f\n",
          s.name, median(s.single[0]), median(s.single[1]), on, off, on / off, median(s.fixed[0]),
          median(s.fixed[1]), median(s.device_fixed), median(s.normalised), median(s.quarter),
          median(s.quarter_batch), median(s.primed));
    }
  }
  std::printf("\nwhere the wall time per point went, defended (on) and plain (off), medians\n");
  for (const auto& [name, phases] : where) {
    std::printf("%s\n", name);
    print_phases("on", phases[0]);
    print_phases("off", phases[1]);
  }
  return 0;
}

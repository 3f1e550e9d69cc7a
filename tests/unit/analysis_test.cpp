#include "engine/analysis.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/metrics.hpp"

namespace kernelscan {
namespace {

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool mentions(const std::vector<std::string>& advice, const std::string& text) {
  return std::any_of(advice.begin(), advice.end(),
                     [&](const std::string& a) { return a.find(text) != std::string::npos; });
}

analysis_context mi300x() {
  const device_model* m = find_device_model("MI300X");
  analysis_context c;
  c.datasheet = m->peaks;
  c.launch_latency_us = m->launch_latency_us;
  c.cache_bytes = m->l2_bytes + m->llc_bytes;
  return c;
}

// A point measured in `median_us` whose outputs were verified and passed.
point_result at(double median_us, l2_mode l2 = l2_mode::cold) {
  point_result r;
  r.status = point_status::ok;
  r.verification.status = "passed";
  r.verification.trials = 3;
  time_summary t;
  t.median = median_us;
  r.time_us = t;
  r.l2 = l2;
  return r;
}

stream_instance triad(std::int64_t n) {
  stream_instance s;
  s.variant = stream_variant::triad;
  s.n = n;
  return s;
}

gemm_instance gemm_f16(std::int64_t n) {
  gemm_instance g;
  g.m = g.n = g.k = n;
  g.type = dtype::f16;
  return g;
}

TEST(Analysis, MemoryBoundStream) {
  const auto ctx = mi300x();
  const kernel_instance k = triad(1 << 26);  // 805 MB per launch
  const double at_85pct = workload_bytes(k) / (0.85 * 5300e3);
  auto r = at(at_85pct);
  analyse_point(r, k, {}, ctx, std::nullopt);
  ASSERT_TRUE(r.metrics);
  EXPECT_EQ(r.metrics->bound, "memory");
  EXPECT_NEAR(r.metrics->gbps, 0.85 * 5300, 1);
  EXPECT_EQ(r.metrics->roof_source, "datasheet");
  EXPECT_TRUE(r.flags.empty());
  EXPECT_TRUE(mentions(r.advice, "memory-bound at 85%"));
  EXPECT_TRUE(mentions(r.advice, "fuse"));
  EXPECT_TRUE(r.fitness.correct);

  // The same kernel at 40% of bandwidth is told to coalesce and vectorise first.
  auto slow = at(workload_bytes(k) / (0.40 * 5300e3));
  analyse_point(slow, k, {}, ctx, std::nullopt);
  EXPECT_TRUE(mentions({slow.advice.front()}, "coalesce"));
  EXPECT_FALSE(mentions(r.advice, "above that ceiling"));

  // Above the ceiling by less than the allowance (unflagged): the advice says what that means.
  auto above = at(workload_bytes(k) / (1.05 * 5300e3));
  analyse_point(above, k, {}, ctx, std::nullopt);
  EXPECT_TRUE(above.flags.empty());
  EXPECT_TRUE(mentions({above.advice.front()},
                       "memory-bound at 105% of bandwidth, above that "
                       "ceiling (part of the traffic came from the caches"))
      << above.advice.front();
}

// On a CPU device the advice speaks of SIMD loops, caches and cores: no coalescing, warps,
// occupancy, LDS, matrix cores or graphs of launches, which a CPU driver has not.
// A point cut short after fewer samples than a 95% interval of its median takes is told, first,
// what timing setting gives it them; one with enough, or stopped for its noise target, is not.
TEST(Analysis, TooFewSamplesAreToldWhatTimingGivesThem) {
  const kernel_instance k = triad(1 << 20);
  point_result slow = at(1800000);
  slow.samples = 1;
  slow.stop_reason = "max_time";
  slow.sampling_ms = 1850;
  analyse_point(slow, k, {}, mi300x(), std::nullopt);
  ASSERT_GE(slow.advice.size(), 2u);
  EXPECT_EQ(slow.advice.front(),
            "only 1 sample within timing.max_time_ms (2000 ms), too few for a 95% interval of "
            "the median (it takes 6): at about 1850 ms a sample, a max_time_ms of 14000 takes "
            "them");
  point_result capped = at(10);
  capped.samples = 3;
  capped.stop_reason = "max_samples";
  job_spec spec;
  spec.timing.max_samples = 3;
  analyse_point(capped, k, spec, mi300x(), std::nullopt);
  ASSERT_FALSE(capped.advice.empty());
  EXPECT_EQ(capped.advice.front(),
            "timing.max_samples 3 stopped it at 3 samples, too few for a 95% interval of the "
            "median (it takes 6): give it 6 or more");
  point_result enough = at(10);
  enough.samples = 6;
  enough.stop_reason = "max_time";
  enough.sampling_ms = 2000;
  EXPECT_FALSE(sampling_advice(enough, {}));
  point_result converged = slow;
  converged.stop_reason = "noise_target";
  EXPECT_FALSE(sampling_advice(converged, {}));
}

TEST(Analysis, ACpuDeviceIsAdvisedAsACpu) {
  custom_instance c;
  c.bytes = 4.0 * (1 << 20);
  c.flops = 1 << 20;
  const kernel_instance k = c;
  const auto advice_at = [&](const std::string& bound, double pct, const kernel_instance& of,
                             bool cpu) {
    point_metrics m;
    m.bound = bound;
    m.roof_pct = pct;
    m.arithmetic_intensity = 0.25;
    return advise(m, of, l2_mode::cold, std::nullopt, cpu);
  };
  const auto slow = advice_at("memory", 2, k, true);
  EXPECT_TRUE(mentions(slow, "memory-bound at 2% of bandwidth: vectorise (each work-item a run"))
      << slow.front();
  EXPECT_TRUE(mentions(slow, "give every core work-groups of its own"));
  EXPECT_TRUE(mentions(slow, "block the loops"));
  const auto matrix = advice_at("compute", 10, gemm_f16(1024), true);
  EXPECT_TRUE(mentions(matrix, "compute-bound at 10% of peak: vectorise the inner loops"));
  const auto latency = advice_at("latency", 1, k, true);
  for (const auto& advice : {slow, matrix, latency}) {
    for (const char* gpu : {"coalesce", "occupancy", "warps", "waves", "LDS/shared", "matrix core",
                            "graph of launches"}) {
      EXPECT_FALSE(mentions(advice, gpu)) << gpu;
    }
  }
  // The same points on a GPU keep the GPU's advice.
  EXPECT_TRUE(mentions(advice_at("memory", 2, k, false), "coalesce"));
  EXPECT_TRUE(mentions(advice_at("compute", 10, gemm_f16(1024), false), "matrix cores"));
  EXPECT_TRUE(mentions(advice_at("latency", 1, k, false), "graph of launches"));
}

// A user kernel's registers and occupancy, where the platform tells them, make the occupancy
// advice name the occupancy and what limits it; local memory it spills to is advice of its own.
TEST(Analysis, OccupancyAdviceNamesTheMeasuredOccupancyAndItsLimit) {
  const auto ctx = mi300x();
  custom_instance c;
  c.bytes = 12.0 * (1 << 26);
  c.flops = 2.0 * (1 << 26);
  c.launch.block = {256, 1, 1};
  const kernel_instance k = c;
  const double at_40pct = *c.bytes / (0.40 * 5300e3);

  auto unknown = at(at_40pct);  // OpenCL: no occupancy told
  analyse_point(unknown, k, {}, ctx, std::nullopt);
  EXPECT_TRUE(mentions(unknown.advice, "check occupancy"));

  auto low = at(at_40pct);
  kernel_resources res;
  res.registers = 128;
  res.local_bytes = 0;
  res.blocks_per_unit = 2;
  res.occupancy = 0.25;
  res.limited_by = {"registers"};
  low.resources = res;
  analyse_point(low, k, {}, ctx, std::nullopt);
  EXPECT_TRUE(mentions(low.advice,
                       "occupancy 25% (2 blocks per unit, limited by registers): too few warps"))
      << low.advice.front();
  EXPECT_TRUE(mentions(low.advice, "fewer registers per thread (128 now"));
  EXPECT_FALSE(mentions(low.advice, "check occupancy"));
  EXPECT_FALSE(mentions(low.advice, "local memory"));

  auto shared = at(at_40pct);
  res.limited_by = {"shared_memory"};
  res.shared_bytes = 49152;
  shared.resources = res;
  analyse_point(shared, k, {}, ctx, std::nullopt);
  EXPECT_TRUE(mentions(shared.advice, "less shared memory per block (49152 bytes now)"));

  // Half the unit's warps or more: occupancy is not what holds the kernel back.
  auto full = at(at_40pct);
  res.occupancy = 0.75;
  res.local_bytes = 256;
  full.resources = res;
  analyse_point(full, k, {}, ctx, std::nullopt);
  EXPECT_FALSE(mentions(full.advice, "occupancy"));
  EXPECT_TRUE(mentions(full.advice, "keeps 256 bytes per thread in local memory"));
}

TEST(Analysis, ComputeBoundLargeF16Gemm) {
  const auto ctx = mi300x();
  const kernel_instance k = gemm_f16(8192);
  auto r = at(workload_flops(k) / (0.70 * 1307.4e6));
  analyse_point(r, k, {}, ctx, std::nullopt);
  EXPECT_EQ(r.metrics->bound, "compute");
  EXPECT_NEAR(r.metrics->roof_pct, 70, 0.5);
  EXPECT_TRUE(r.flags.empty());
  EXPECT_TRUE(mentions(r.advice, "compute-bound at 70%"));

  auto weak = at(workload_flops(k) / (0.20 * 1307.4e6));
  analyse_point(weak, k, {}, ctx, std::nullopt);
  EXPECT_TRUE(mentions(weak.advice, "matrix cores"));
}

TEST(Analysis, LatencyBoundTinyKernel) {
  const auto ctx = mi300x();
  const kernel_instance k = triad(1024);
  auto r = at(ctx.launch_latency_us + 0.5);
  analyse_point(r, k, {}, ctx, std::nullopt);
  EXPECT_EQ(r.metrics->bound, "latency");
  EXPECT_TRUE(mentions({r.advice.front()}, "latency-bound"));
  EXPECT_TRUE(mentions(r.advice, "persistent kernel"));

  // The same tiny work taking many launches' time is held back by its own code, not the launch.
  auto slow = at(10 * ctx.launch_latency_us);
  analyse_point(slow, k, {}, ctx, std::nullopt);
  EXPECT_EQ(slow.metrics->bound, "memory");
  EXPECT_FALSE(mentions(slow.advice, "latency-bound"));
  EXPECT_TRUE(mentions(slow.advice, "memory-bound at"));
}

TEST(Analysis, FasterThanTheRooflineIsFlaggedAndScoresZero) {
  const auto ctx = mi300x();
  const kernel_instance k = gemm_f16(8192);
  auto r = at(workload_flops(k) / (1.5 * 1307.4e6));  // 150% of peak: impossible
  fitness_options o;
  o.target_us = 1e6;
  job_spec spec;
  spec.fitness = o;
  analyse_point(r, k, spec, ctx, std::nullopt);
  EXPECT_TRUE(has(r.flags, "faster_than_roofline"));
  EXPECT_FALSE(r.fitness.correct);
  EXPECT_EQ(r.fitness.combined_score, 0);

  // Within the 10% allowance of the floor: not flagged.
  auto close = at(workload_flops(k) / (1.05 * 1307.4e6));
  analyse_point(close, k, spec, ctx, std::nullopt);
  EXPECT_FALSE(has(close.flags, "faster_than_roofline"));
}

TEST(Analysis, MeasuredCeilingsJudgeOnceKnown) {
  auto ctx = mi300x();
  device_peaks measured = ctx.datasheet;
  measured.bandwidth_gbps = 4000;
  ctx.measured = measured;
  const kernel_instance k = triad(1 << 26);
  auto r = at(workload_bytes(k) / (4800e3));  // beats the measured 4000 GB/s by 20%
  analyse_point(r, k, {}, ctx, std::nullopt);
  EXPECT_EQ(r.metrics->roof_source, "measured");
  EXPECT_TRUE(has(r.flags, "faster_than_roofline"));
}

// A point that beats a measured bandwidth ceiling is judged by the bandwidth measured again over
// its own working set where that is higher: flagged only if it beats that too.
TEST(Analysis, ABeatenMeasuredBandwidthCeilingIsMeasuredAgainBeforeAPointIsFlagged) {
  auto ctx = mi300x();
  device_peaks measured = ctx.datasheet;
  measured.bandwidth_gbps = 2000;  // measured low, while other work shared the machine
  ctx.measured = measured;
  std::vector<double> asked;
  double again = 0;
  ctx.bandwidth_at = [&](double bytes) {
    asked.push_back(bytes);
    return again;
  };
  const kernel_instance k = triad(1 << 26);
  const double at_3000 = workload_bytes(k) / 3000e3;  // 50% above the measured ceiling

  again = 3200;  // the device streams this working set at 3200 GB/s now: an honest point
  auto honest = at(at_3000);
  analyse_point(honest, k, {}, ctx, std::nullopt);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_DOUBLE_EQ(asked[0], workload_bytes(k));
  EXPECT_FALSE(has(honest.flags, "faster_than_roofline"));
  EXPECT_TRUE(honest.fitness.correct);
  EXPECT_TRUE(mentions(honest.advice, "measured again, reached 3200.0 GB/s"))
      << honest.advice.back();
  EXPECT_TRUE(mentions(honest.advice, "(2000.0 GB/s)"));
  // Placed against the ceiling that judged it: 3000 of 3200 GB/s, not 150% of 2000.
  EXPECT_EQ(honest.metrics->roof_source, "measured_again");
  EXPECT_NEAR(honest.metrics->roof_pct, 100.0 * 3000 / 3200, 0.01);
  EXPECT_EQ(honest.metrics->bound, "memory");
  EXPECT_TRUE(mentions(honest.advice, "memory-bound at 94% of bandwidth")) << honest.advice[0];

  // Measured again no faster, slower, or not at all: the flag stands.
  for (const double a : {2100.0, 1500.0, 0.0}) {
    again = a;
    auto r = at(at_3000);
    analyse_point(r, k, {}, ctx, std::nullopt);
    EXPECT_TRUE(has(r.flags, "faster_than_roofline")) << a;
    EXPECT_EQ(r.fitness.combined_score, 0) << a;
    // Against the higher of the two ceilings, and named so only where it was the new one.
    const double judging = std::max(a, 2000.0);
    EXPECT_NEAR(r.metrics->roof_pct, 100.0 * 3000 / judging, 0.01) << a;
    EXPECT_EQ(r.metrics->roof_source, a > 2000 ? "measured_again" : "measured") << a;
  }

  // Within the allowance of the ceiling, or hot over a working set the caches hold: nothing
  // to measure again.
  asked.clear();
  auto close = at(workload_bytes(k) / 2100e3);
  analyse_point(close, k, {}, ctx, std::nullopt);
  EXPECT_FALSE(has(close.flags, "faster_than_roofline"));
  EXPECT_EQ(close.metrics->roof_source, "measured");
  const kernel_instance small = triad(1 << 20);
  auto hot = at(workload_bytes(small) / 4000e3, l2_mode::hot);
  analyse_point(hot, small, {}, ctx, std::nullopt);
  EXPECT_TRUE(asked.empty());

  // A point beyond the compute ceiling is flagged whatever the bandwidth: not measured again.
  const kernel_instance g = gemm_f16(8192);
  auto gemm = at(workload_flops(g) / (1.5 * 1307.4e6));
  analyse_point(gemm, g, {}, ctx, std::nullopt);
  EXPECT_TRUE(has(gemm.flags, "faster_than_roofline"));
  EXPECT_TRUE(asked.empty());

  // Judged by the datasheet (no measured ceiling): the datasheet stands.
  auto by_datasheet = mi300x();
  by_datasheet.bandwidth_at = ctx.bandwidth_at;
  auto beyond = at(workload_bytes(k) / (1.5 * 5300e3));
  analyse_point(beyond, k, {}, by_datasheet, std::nullopt);
  EXPECT_TRUE(has(beyond.flags, "faster_than_roofline"));
  EXPECT_TRUE(asked.empty());
}

// A point whose work alone beats a measured compute ceiling is judged by the vector f32 peak
// measured again where that is higher (a CPU device's FMA peak, measured while other work shared
// its cores, reads low): flagged only if it beats that too.
TEST(Analysis, ABeatenMeasuredComputeCeilingIsMeasuredAgainBeforeAPointIsFlagged) {
  auto ctx = mi300x();
  device_peaks measured = ctx.datasheet;
  measured.f32_tflops = measured.vector_f32_tflops = 0.01;  // 10 GFLOP/s, measured low
  ctx.measured = measured;
  int asked = 0;
  double again = 0;
  ctx.vector_peak_again = [&] {
    ++asked;
    return again;
  };
  const kernel_instance k = triad(1 << 20);  // hot in the caches: only its work bounds it
  const double at_20_gflops = workload_flops(k) / 20e3;

  again = 0.05;  // the FMA kernel reaches 50 GFLOP/s now: an honest point
  auto honest = at(at_20_gflops, l2_mode::hot);
  analyse_point(honest, k, {}, ctx, std::nullopt);
  EXPECT_EQ(asked, 1);
  EXPECT_FALSE(has(honest.flags, "faster_than_roofline"));
  EXPECT_TRUE(honest.fitness.correct);
  EXPECT_TRUE(mentions(honest.advice, "measured again, reached 0.05 TFLOP/s"))
      << honest.advice.back();
  EXPECT_EQ(honest.metrics->roof_source, "measured_again");
  EXPECT_NEAR(honest.metrics->roof_pct, 100.0 * 0.02 / 0.05, 0.01);

  // Measured again no faster than the point, slower, or not at all: the flag stands.
  for (const double a : {0.015, 0.005, 0.0}) {
    again = a;
    auto r = at(at_20_gflops, l2_mode::hot);
    analyse_point(r, k, {}, ctx, std::nullopt);
    EXPECT_TRUE(has(r.flags, "faster_than_roofline")) << a;
    EXPECT_EQ(r.fitness.combined_score, 0) << a;
  }

  // Under the ceiling, or judged by the datasheet: nothing measured again.
  asked = 0;
  auto under = at(workload_flops(k) / 5e3, l2_mode::hot);
  analyse_point(under, k, {}, ctx, std::nullopt);
  EXPECT_FALSE(has(under.flags, "faster_than_roofline"));
  auto by_datasheet = mi300x();
  by_datasheet.vector_peak_again = ctx.vector_peak_again;
  auto beyond = at(workload_flops(k) / (1.5 * 163.4e6), l2_mode::hot);
  analyse_point(beyond, k, {}, by_datasheet, std::nullopt);
  EXPECT_TRUE(has(beyond.flags, "faster_than_roofline"));
  EXPECT_EQ(asked, 0);
}

TEST(Analysis, HotCachesMayBeatDramBandwidthButColdOnesMayNot) {
  const auto ctx = mi300x();
  const kernel_instance k = triad(1 << 20);  // 12.6 MB: fits in the caches
  const double twice_dram = workload_bytes(k) / (2 * 5300e3);
  auto hot = at(twice_dram, l2_mode::hot);
  analyse_point(hot, k, {}, ctx, std::nullopt);
  EXPECT_FALSE(has(hot.flags, "faster_than_roofline"));
  EXPECT_TRUE(mentions(hot.advice, "warm caches"));
  auto cold = at(twice_dram, l2_mode::cold);
  analyse_point(cold, k, {}, ctx, std::nullopt);
  EXPECT_TRUE(has(cold.flags, "faster_than_roofline"));
}

// A lone launch far faster timed than verified is flagged where both read their bytes from
// DRAM; timed hot on a working set the caches hold, it is compared with launches that found the
// caches cold, and is not.
TEST(Analysis, FasterThanVerificationComparesLaunchesThatReadTheSameMemory) {
  const auto ctx = mi300x();
  // Whether a point of `k` timed at `median_us` in `batch`es, its fastest verification launch
  // `verified_us`, is flagged.
  auto flagged = [&](const kernel_instance& k, double median_us, l2_mode l2, double verified_us,
                     std::int64_t batch = 1) {
    auto r = at(median_us, l2);
    r.batch = batch;
    r.verification.launch_us = verified_us;
    analyse_point(r, k, {}, ctx, std::nullopt);
    return has(r.flags, "faster_than_verification");
  };
  const kernel_instance small = triad(1 << 16);  // 786 KB: fits in the caches
  EXPECT_TRUE(flagged(small, 100, l2_mode::cold, 500));
  EXPECT_FALSE(flagged(small, 100, l2_mode::hot, 500));
  // Hot, but a working set larger than the caches: from DRAM either way.
  const kernel_instance large = triad(std::int64_t(1) << 26);  // 1.6 GB
  EXPECT_TRUE(flagged(large, 1e5, l2_mode::hot, 5e5));
  // Batched hot samples are compared all the same: a batch is not four times faster per launch.
  EXPECT_TRUE(flagged(small, 100, l2_mode::hot, 500, 8));
  // Not far enough apart.
  EXPECT_FALSE(flagged(small, 200, l2_mode::cold, 500));
}

TEST(Analysis, VerificationFlags) {
  verification_result v;
  v.status = "failed";
  v.unwritten = 100;
  EXPECT_EQ(verification_flags(v, dtype::f32),
            (std::vector<std::string>{"verification_failed", "output_not_written"}));
  v.unwritten = 0;
  v.max_rel_err = 3e-3;  // f16-sized errors in an f32 result
  EXPECT_EQ(verification_flags(v, dtype::f32),
            (std::vector<std::string>{"verification_failed", "precision_mismatch"}));
  // The same errors in an f16 result are simply wrong, and large errors are not precision.
  EXPECT_EQ(verification_flags(v, dtype::f16), std::vector<std::string>{"verification_failed"});
  v.max_rel_err = 0.5;
  EXPECT_EQ(verification_flags(v, dtype::f32), std::vector<std::string>{"verification_failed"});
  // Norm-relative errors of narrower arithmetic are; those of a wrong answer (zeros: 1) are not.
  v.norm_rel_err = 3e-3;
  EXPECT_EQ(verification_flags(v, dtype::f32),
            (std::vector<std::string>{"verification_failed", "precision_mismatch"}));
  v.norm_rel_err = 1;
  EXPECT_EQ(verification_flags(v, dtype::f32), std::vector<std::string>{"verification_failed"});
  v.norm_rel_err = 0;
  v.status = "passed";
  EXPECT_TRUE(verification_flags(v, dtype::f32).empty());
  v.status = "skipped";
  EXPECT_TRUE(verification_flags(v, dtype::f32).empty());
}

TEST(Analysis, VerificationFlagsReachThePointAndVoidItsScore) {
  const auto ctx = mi300x();
  const kernel_instance k = triad(1 << 26);
  auto r = at(workload_bytes(k) / (0.5 * 5300e3));
  r.verification.status = "failed";
  r.verification.unwritten = 1 << 25;
  analyse_point(r, k, {}, ctx, std::nullopt);
  EXPECT_TRUE(has(r.flags, "output_not_written"));
  EXPECT_TRUE(has(r.flags, "verification_failed"));
  EXPECT_EQ(r.fitness.combined_score, 0);
}

TEST(Analysis, ExcessiveSpeedupIsAWarningOnly) {
  const auto ctx = mi300x();
  const kernel_instance k = triad(1 << 26);
  auto r = at(workload_bytes(k) / (0.5 * 5300e3));
  job_spec spec;
  spec.fitness.baseline = stream_spec{};
  analyse_point(r, k, spec, ctx, speedup_estimate{12, 11, 13, 1000});
  EXPECT_TRUE(has(r.flags, "excessive_speedup"));
  EXPECT_TRUE(r.fitness.correct);
  EXPECT_DOUBLE_EQ(r.fitness.combined_score, 10);  // capped at fitness.score_cap
}

TEST(Analysis, AFailedPointGetsOnlyAZeroScore) {
  auto r = failed_point(3, {}, "device_fault", "crashed");
  analyse_point(r, triad(10), {}, mi300x(), std::nullopt);
  EXPECT_FALSE(r.metrics);
  EXPECT_TRUE(r.advice.empty());
  EXPECT_EQ(r.fitness.combined_score, 0);
}

}  // namespace
}  // namespace kernelscan

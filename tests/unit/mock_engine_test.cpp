#include "engine/mock_engine.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <string>
#include <utility>
#include <vector>

#include "api/job_spec_codec.hpp"

namespace kernelscan {
namespace {

const device_model& mi300x() {
  const device_model* m = find_device_model("MI300X");
  if (!m) throw std::runtime_error("MI300X is not in the catalog");
  return *m;
}

job_spec gemm_job(std::vector<std::int64_t> sizes, dtype type = dtype::f16,
                  gemm_impl impl = gemm_impl::library) {
  job_spec spec;
  gemm_spec g;
  g.m = g.n = g.k = int_expr{"S", std::nullopt};
  g.type = type;
  g.impl = impl;
  spec.kernel = g;
  spec.sweep = sweep({{"S", std::move(sizes)}});
  return spec;
}

job_spec stream_job(std::vector<std::int64_t> sizes, l2_mode l2 = l2_mode::cold) {
  job_spec spec;
  stream_spec s;
  s.variant = stream_variant::triad;
  s.n = int_expr{"N", std::nullopt};
  spec.kernel = s;
  spec.sweep = sweep({{"N", std::move(sizes)}});
  spec.timing.l2 = l2;
  return spec;
}

TEST(MockEngine, DescribesTheCatalogDevice) {
  mock_engine engine(mi300x(), 3);
  const auto& d = engine.device();
  EXPECT_EQ(d.index, 3);
  EXPECT_EQ(d.engine, engine_kind::mock);
  EXPECT_EQ(d.vendor, "AMD");
  EXPECT_EQ(d.model, "MI300X");
  EXPECT_EQ(d.name, "AMD Instinct MI300X (mock)");
  EXPECT_EQ(d.compute_units, 304);
  ASSERT_TRUE(d.datasheet.has_value());
  EXPECT_DOUBLE_EQ(d.datasheet->bandwidth_gbps, 5300);
}

TEST(MockEngine, MeasuresAPointWithSensibleStatistics) {
  mock_engine engine(mi300x(), 0);
  const job_plan plan(gemm_job({512, 2048}), {});
  const auto r = engine.measure(plan, 1, 42);
  EXPECT_EQ(r.index, 1u);
  EXPECT_EQ(r.params, (std::vector<std::pair<std::string, std::int64_t>>{{"S", 2048}}));
  EXPECT_EQ(r.status, point_status::ok);
  EXPECT_FALSE(r.error.has_value());
  EXPECT_TRUE(r.converged);
  EXPECT_EQ(r.stop_reason, "noise_target");
  ASSERT_TRUE(r.time_us.has_value());
  const auto& t = *r.time_us;
  EXPECT_EQ(t.count, r.samples);
  EXPECT_GE(r.samples, 10u);       // timing.min_samples
  EXPECT_GE(r.sampling_ms, 10.0);  // timing.min_time_ms, on the simulated clock
  EXPECT_EQ(r.discarded, 0u);
  EXPECT_GT(t.min, 0.0);
  EXPECT_LE(t.min, t.p5);
  EXPECT_LE(t.p5, t.median);
  EXPECT_LE(t.median, t.p95);
  EXPECT_LE(t.p95, t.p99);
  EXPECT_LE(t.p99, t.max);
  EXPECT_LE(t.ci95_low.value(), t.median);
  EXPECT_GE(t.ci95_high.value(), t.median);
  EXPECT_LE(t.rel_noise.value(), plan.spec().timing.target_rel_noise);
  // The median is close to the noise-free model time (log-normal noise, sigma 0.8%).
  const double model = engine.model_time_us(plan.resolve(1), l2_mode::cold);
  EXPECT_NEAR(t.median / model, 1.0, 0.02);
  EXPECT_EQ(r.l2, l2_mode::cold);

  ASSERT_TRUE(r.metrics.has_value());
  const auto& m = *r.metrics;
  const double flops = 2.0 * 2048 * 2048 * 2048;
  EXPECT_DOUBLE_EQ(m.flops, flops);
  EXPECT_DOUBLE_EQ(m.bytes, 2.0 * 3 * 2048 * 2048);
  EXPECT_DOUBLE_EQ(m.tflops, flops / t.median / 1e6);
  EXPECT_DOUBLE_EQ(m.gbps, m.bytes / t.median / 1e3);
  EXPECT_GT(m.roof_pct, 0.0);
  EXPECT_LE(m.roof_pct, 100.0);
  EXPECT_EQ(m.roof_source, "datasheet");

  EXPECT_EQ(r.verification.status, "skipped");
  EXPECT_FALSE(r.verification.note.empty());
  EXPECT_EQ(r.environment.device, "AMD Instinct MI300X (mock)");
  EXPECT_DOUBLE_EQ(r.environment.clock_mhz, 2100);
}

TEST(MockEngine, SameSeedSameResultDifferentSeedDifferent) {
  mock_engine engine(mi300x(), 0);
  const job_plan plan(stream_job({1 << 20}), {});
  const auto a = engine.measure(plan, 0, 7);
  const auto b = engine.measure(plan, 0, 7);
  ASSERT_TRUE(a.time_us && b.time_us);
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.time_us->median, b.time_us->median);
  EXPECT_EQ(a.time_us->mean, b.time_us->mean);
  EXPECT_EQ(a.time_us->max, b.time_us->max);
  EXPECT_EQ(a.sampling_ms, b.sampling_ms);
  // A fresh engine gives the same answer too: nothing carries over between measurements.
  mock_engine fresh(mi300x(), 1);
  EXPECT_EQ(fresh.measure(plan, 0, 7).time_us->mean, a.time_us->mean);

  const auto c = engine.measure(plan, 0, 8);
  ASSERT_TRUE(c.time_us);
  EXPECT_NE(c.time_us->mean, a.time_us->mean);
}

TEST(MockEngine, ModelTimeGrowsWithSize) {
  mock_engine engine(mi300x(), 0);
  const job_plan gemm(gemm_job({1024, 2048, 4096, 8192}), {});
  double previous = 0;
  for (std::uint64_t i = 0; i < gemm.size(); ++i) {
    const double t = engine.model_time_us(gemm.resolve(i), l2_mode::cold);
    EXPECT_GT(t, previous) << gemm.describe_point(i);
    previous = t;
  }
  const job_plan stream(stream_job({1024, 1 << 16, 1 << 20, 1 << 22, 1 << 28}), {});
  previous = 0;
  for (std::uint64_t i = 0; i < stream.size(); ++i) {
    const double t = engine.model_time_us(stream.resolve(i), l2_mode::cold);
    EXPECT_GT(t, previous) << stream.describe_point(i);
    previous = t;
  }
  // Never faster than a launch.
  EXPECT_GE(engine.model_time_us(stream.resolve(0), l2_mode::cold), mi300x().launch_latency_us);
}

TEST(MockEngine, GemmModelTimeIsMonotonicInSize) {
  mock_engine engine(mi300x(), 0);
  for (gemm_impl impl : {gemm_impl::builtin, gemm_impl::library}) {
    std::vector<std::int64_t> sizes;
    for (std::int64_t s = 64; s <= 2048; s += 64)
      sizes.push_back(s);
    const job_plan plan(gemm_job(sizes, dtype::f16, impl), {});
    double previous = 0;
    for (std::uint64_t i = 0; i < plan.size(); ++i) {
      const double t = engine.model_time_us(plan.resolve(i), l2_mode::cold);
      EXPECT_GE(t, previous) << to_string(impl) << " " << plan.describe_point(i);
      previous = t;
    }
  }
}

TEST(MockEngine, BoundClassification) {
  mock_engine engine(mi300x(), 0);
  auto bound_of = [&](const job_spec& spec) {
    const job_plan plan(spec, {});
    const auto r = engine.measure(plan, 0, 1);
    EXPECT_EQ(r.status, point_status::ok);
    return r.metrics ? r.metrics->bound : std::string("none");
  };
  EXPECT_EQ(bound_of(gemm_job({8192})), "compute");
  EXPECT_EQ(bound_of(stream_job({1 << 28})), "memory");
  EXPECT_EQ(bound_of(stream_job({64})), "latency");
  EXPECT_EQ(bound_of(gemm_job({16})), "latency");
}

TEST(MockEngine, HotL2FasterThanColdWhenTheWorkingSetFits) {
  mock_engine engine(mi300x(), 0);
  // Triad over 4 Mi floats: 48 MiB, inside MI300X's 256 MiB Infinity Cache.
  const job_plan fits(stream_job({1 << 22}), {});
  const auto k = fits.resolve(0);
  EXPECT_LT(engine.model_time_us(k, l2_mode::hot), engine.model_time_us(k, l2_mode::cold));
  const auto cold = engine.measure(job_plan(stream_job({1 << 22}, l2_mode::cold), {}), 0, 5);
  const auto hot = engine.measure(job_plan(stream_job({1 << 22}, l2_mode::hot), {}), 0, 5);
  ASSERT_TRUE(cold.time_us && hot.time_us);
  EXPECT_LT(hot.time_us->median, cold.time_us->median);
  EXPECT_EQ(hot.l2, l2_mode::hot);

  // 3 GiB does not fit: hot and cold are the same.
  const job_plan big(stream_job({1 << 28}), {});
  const auto kb = big.resolve(0);
  EXPECT_DOUBLE_EQ(engine.model_time_us(kb, l2_mode::hot), engine.model_time_us(kb, l2_mode::cold));
}

TEST(MockEngine, LibraryGemmFasterThanBuiltin) {
  mock_engine engine(mi300x(), 0);
  const job_plan library(gemm_job({4096}, dtype::f16, gemm_impl::library), {});
  const job_plan builtin(gemm_job({4096}, dtype::f16, gemm_impl::builtin), {});
  EXPECT_LT(engine.model_time_us(library.resolve(0), l2_mode::cold),
            engine.model_time_us(builtin.resolve(0), l2_mode::cold));
  const auto lib = engine.measure(library, 0, 3);
  const auto simple = engine.measure(builtin, 0, 3);
  ASSERT_TRUE(lib.metrics && simple.metrics);
  EXPECT_GT(lib.metrics->tflops, simple.metrics->tflops);
}

TEST(MockEngine, InvalidPointIsAFailedPoint) {
  mock_engine engine(mi300x(), 0);
  job_spec spec = gemm_job({1, 64});
  std::get<gemm_spec>(spec.kernel).m = int_expr{"S - 2", std::nullopt};
  const job_plan plan(std::move(spec), spec_limits::stored().plan);
  const auto bad = engine.measure(plan, 0, 1);
  EXPECT_EQ(bad.status, point_status::failed);
  ASSERT_TRUE(bad.error.has_value());
  EXPECT_EQ(bad.error->type, "invalid_point");
  EXPECT_NE(bad.error->message.find("kernel.m"), std::string::npos) << bad.error->message;
  EXPECT_NE(bad.error->message.find("point 0 (S=1)"), std::string::npos) << bad.error->message;
  EXPECT_EQ(bad.index, 0u);
  EXPECT_EQ(bad.params, (std::vector<std::pair<std::string, std::int64_t>>{{"S", 1}}));
  EXPECT_FALSE(bad.time_us.has_value());
  EXPECT_FALSE(bad.metrics.has_value());
  EXPECT_EQ(bad.samples, 0u);

  const auto good = engine.measure(plan, 1, 1);
  EXPECT_EQ(good.status, point_status::ok);
  EXPECT_TRUE(good.time_us.has_value());
}

TEST(MockEngine, TimingOptionsAreHonoured) {
  mock_engine engine(mi300x(), 0);
  job_spec spec = stream_job({1 << 20});
  spec.timing.min_samples = 500;
  spec.timing.min_time_ms = 0;
  const auto many = engine.measure(job_plan(spec, {}), 0, 1);
  EXPECT_GE(many.samples, 500u);
  EXPECT_TRUE(many.converged);

  spec.timing.min_samples = 10;
  spec.timing.max_samples = 10;
  spec.timing.target_rel_noise = 1e-6;
  const auto capped = engine.measure(job_plan(spec, {}), 0, 1);
  EXPECT_EQ(capped.samples, 10u);
  EXPECT_FALSE(capped.converged);
  EXPECT_EQ(capped.stop_reason, "max_samples");
}

TEST(MockEngine, ABaselineIsSampledInterleavedAndGivesTheSpeedup) {
  mock_engine engine(mi300x(), 0);
  job_spec spec = gemm_job({2048}, dtype::f16, gemm_impl::library);
  gemm_spec builtin = std::get<gemm_spec>(spec.kernel);
  builtin.impl = gemm_impl::builtin;
  spec.fitness.baseline = builtin;
  spec.mock.output = "correct";  // simulated verification: passed
  const job_plan plan(spec, {});
  const auto r = engine.measure(plan, 0, 7);
  EXPECT_TRUE(r.simulated);
  ASSERT_TRUE(r.fitness.speedup);
  const double expected = engine.model_time_us(*plan.resolve_baseline(0), l2_mode::cold) /
                          engine.model_time_us(plan.resolve(0), l2_mode::cold);
  EXPECT_NEAR(*r.fitness.speedup, expected, expected * 0.02);
  EXPECT_LE(r.fitness.speedup_ci95->first, *r.fitness.speedup);
  EXPECT_GE(r.fitness.speedup_ci95->second, *r.fitness.speedup);
  EXPECT_NEAR(*r.fitness.baseline_us,
              engine.model_time_us(*plan.resolve_baseline(0), l2_mode::cold),
              *r.fitness.baseline_us * 0.03);
  EXPECT_TRUE(r.fitness.correct);
  EXPECT_DOUBLE_EQ(r.fitness.combined_score, *r.fitness.speedup);
}

TEST(MockEngine, MockSpeedupBeatsTheRooflineAndScoresZero) {
  mock_engine engine(mi300x(), 0);
  job_spec spec = gemm_job({8192});
  spec.mock.speedup = 3;  // 3 × 82% of peak
  const auto r = engine.measure(job_plan(spec, {}), 0, 1);
  EXPECT_GT(r.metrics->roof_pct, 200);
  EXPECT_NE(std::find(r.flags.begin(), r.flags.end(), "faster_than_roofline"), r.flags.end());
  EXPECT_EQ(r.fitness.combined_score, 0);
  spec.mock.speedup = 1;
  spec.mock.output = "correct";
  const auto honest = engine.measure(job_plan(spec, {}), 0, 1);
  EXPECT_TRUE(honest.flags.empty());
  EXPECT_EQ(honest.fitness.combined_score, 1);
}

TEST(MockEngine, ItsPointsAreSimulatedAndUnverifiedOnesNeverCorrect) {
  // The mock runs no device code: without mock.output nothing was verified, so however good
  // the modelled time, the point is not correct and scores 0 (a kernel that does not compile
  // would get the same time).
  mock_engine engine(mi300x(), 0);
  job_spec spec = gemm_job({1024});
  spec.fitness.target_us = 1e6;
  const auto r = engine.measure(job_plan(spec, {}), 0, 1);
  EXPECT_TRUE(r.simulated);
  EXPECT_EQ(r.verification.status, "skipped");
  EXPECT_FALSE(r.fitness.correct);
  EXPECT_EQ(r.fitness.combined_score, 0);
  EXPECT_GT(*r.fitness.latency_score, 1);
}

TEST(MockEngine, SimulatedOutputsDriveVerificationAndItsFlags) {
  mock_engine engine(mi300x(), 0);
  job_spec spec = stream_job({1 << 20});
  EXPECT_EQ(engine.measure(job_plan(spec, {}), 0, 1).verification.status, "skipped");
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {"correct", {}},
      {"wrong", {"verification_failed"}},
      {"unwritten", {"verification_failed", "output_not_written"}},
      {"half_written", {"verification_failed", "output_not_written"}},
      {"low_precision", {"verification_failed", "precision_mismatch"}},
  };
  for (const auto& [output, flags] : cases) {
    spec.mock.output = output;
    const auto r = engine.measure(job_plan(spec, {}), 0, 1);
    EXPECT_EQ(r.verification.status, output == "correct" ? "passed" : "failed") << output;
    EXPECT_EQ(r.flags, flags) << output;
    EXPECT_EQ(r.fitness.correct, output == "correct") << output;
    EXPECT_EQ(r.verification.trials, 3) << output;
    if (output == "half_written") {
      EXPECT_EQ(r.verification.unwritten, std::uint64_t(1 << 19));
    }
  }
}

TEST(MockEngine, MeasuresASimulatedRooflineBelowTheDatasheet) {
  mock_engine engine(mi300x(), 0);
  const auto roof = engine.measure_roofline();
  const auto& sheet = mi300x().peaks;
  EXPECT_GT(roof.peaks.bandwidth_gbps, 0.8 * sheet.bandwidth_gbps);
  EXPECT_LT(roof.peaks.bandwidth_gbps, sheet.bandwidth_gbps);
  for (const auto& [got, peak] :
       {std::pair{roof.peaks.f16_tflops, sheet.f16_tflops},
        std::pair{roof.peaks.f64_tflops, sheet.f64_tflops},
        std::pair{roof.peaks.vector_f32_tflops, sheet.vector_f32_tflops}}) {
    EXPECT_GT(got, 0.7 * peak);
    EXPECT_LT(got, peak);
  }
  EXPECT_NE(roof.method.find("simulated"), std::string::npos);
  ASSERT_TRUE(engine.device().measured);
  // Points are now judged by it, and an honest library GEMM stays under it.
  const auto r = engine.measure(job_plan(gemm_job({4096, 8192}), {}), 1, 1);
  EXPECT_EQ(r.metrics->roof_source, "measured");
  EXPECT_TRUE(r.flags.empty());
  EXPECT_LT(r.metrics->roof_pct, 105);
}

}  // namespace
}  // namespace kernelscan

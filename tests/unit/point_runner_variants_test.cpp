// The point runner measuring a job's variants side by side, against the fake backend: every
// variant verified and timed-checked alike, samples taken in rotation, one variant failing while
// the others are measured, and the speedups between them with their intervals.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "api/job_spec_codec.hpp"
#include "engine/device_catalog.hpp"
#include "engine/job_plan.hpp"
#include "engine/mock_engine.hpp"
#include "engine/point_runner.hpp"
#include "point_runner_fixture.hpp"

namespace kernelscan {
namespace {

using testing::fake_backend;

// y = 2*x over N elements, in three variants ("slow", "mid", "fast") of one source; the
// reference is the "scale" kernel.
json variants_job(const json& variants, int trials = 2) {
  json j = json::parse(R"({
    "kernel": {"op": "custom", "language": "hip",
      "source": "extern \"C\" __global__ void k() {}",
      "block": [256, 1, 1], "grid": [4, 1, 1],
      "args": [{"name": "n", "type": "i32", "value": "N"},
               {"name": "a", "type": "f32", "value": 2.0},
               {"name": "x", "type": "f32*", "count": "N", "init": "random"},
               {"name": "y", "type": "f32*", "count": "N", "output": true}],
      "flops": "N", "bytes": "8*N",
      "reference": {"op": "custom", "entry": "scale", "source": "extern \"C\" __global__ void k() {}",
                    "block": [256, 1, 1], "grid": [4, 1, 1]}},
    "sweep": {"N": [1000]},
    "timing": {"l2": "hot", "min_samples": 10, "max_time_ms": 50}
  })");
  j["variants"] = variants;
  j["verify"] = {{"trials", trials}};
  return j;
}

json three_variants() {
  return json::array({{{"name", "slow"}, {"entry", "slow"}},
                      {{"name", "mid"}, {"entry", "mid"}},
                      {{"name", "fast"}, {"entry", "fast"}}});
}

using testing::plan_of;
using testing::runner_fixture;

runner_fixture make_runner() {
  auto f = std::make_unique<fake_backend>();
  auto scale = [](double bias) {
    return [bias](const fake_backend::host_args& a) {
      const int n = int(a.scalars[0]);
      auto* x = static_cast<float*>(a.buffers[0]);
      auto* y = static_cast<float*>(a.buffers[1]);
      for (int i = 0; i < n; ++i)
        y[i] = float(a.scalars[1] * x[i] + bias);
    };
  };
  for (const char* name : {"scale", "slow", "mid", "fast"})
    f->kernels[name] = scale(0);
  f->kernels["wrong"] = scale(1);
  // Device times per launch; 2 µs of launch overhead is added to each.
  f->kernel_time_us["scale"] = 50;
  f->kernel_time_us["slow"] = 98;  // 100 µs
  f->kernel_time_us["mid"] = 48;   // 50 µs
  f->kernel_time_us["fast"] = 23;  // 25 µs
  f->kernel_time_us["wrong"] = 18;
  return runner_fixture(std::move(f));
}

const point_result& row_of(const std::vector<point_result>& rows, const std::string& variant) {
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [&](const point_result& r) { return r.variant == variant; });
  if (it == rows.end()) throw std::runtime_error("no row for " + variant);
  return *it;
}

// The entries launched in timed samples, in order ("sample candidate" then "launch ENTRY").
std::vector<std::string> sampled_entries(const std::vector<std::string>& log) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 1 < log.size(); ++i) {
    if (log[i] == "sample candidate" && log[i + 1].rfind("launch ", 0) == 0)
      out.push_back(log[i + 1].substr(7));
  }
  return out;
}

TEST(PointRunnerVariants, EveryVariantGetsARowInTheSpecsOrder) {
  auto t = make_runner();
  const auto rows = t.runner.measure_all(plan_of(variants_job(three_variants())), 0, 7);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].variant, "slow");
  EXPECT_EQ(rows[1].variant, "mid");
  EXPECT_EQ(rows[2].variant, "fast");
  for (const auto& r : rows) {
    ASSERT_EQ(r.status, point_status::ok)
        << *r.variant << ": " << (r.error ? r.error->message : "");
    EXPECT_EQ(r.index, 0u);
    EXPECT_EQ(r.params, (std::vector<std::pair<std::string, std::int64_t>>{{"N", 1000}}));
    EXPECT_EQ(r.verification.status, "passed") << *r.variant;
    EXPECT_EQ(r.verification.trials, 2);
    EXPECT_GE(r.verification.timed_checks, 1) << *r.variant;  // timed checks for every variant
    EXPECT_EQ(r.verification.timed_wrong, 0u);
  }
  EXPECT_NEAR(row_of(rows, "slow").time_us->median, 100, 1e-9);
  EXPECT_NEAR(row_of(rows, "fast").time_us->median, 25, 1e-9);
  EXPECT_EQ(t.fake->live_buffers(), 0u);
}

TEST(PointRunnerVariants, SamplesRotateThroughTheVariants) {
  auto t = make_runner();
  const auto rows = t.runner.measure_all(plan_of(variants_job(three_variants())), 0, 7);
  ASSERT_EQ(rows.size(), 3u);
  const auto entries = sampled_entries(t.fake->log);
  // Each variant's timed verification launches (one per trial), one variant after the other;
  // then the batch probes (three of each, in turn); then A/B/C/A/B/C...
  const std::vector<std::string> order{"slow", "mid", "fast"};
  const std::size_t trials = 2, verified = 3 * trials, first = verified + 9;
  ASSERT_GT(entries.size(), first + 30);
  for (std::size_t i = 0; i < verified; ++i)
    EXPECT_EQ(entries[i], order[i / trials]) << "verification launch " << i;
  for (std::size_t i = verified; i < first; ++i)
    EXPECT_EQ(entries[i], order[(i - verified) / 3]) << "probe " << i;
  std::size_t samples = 0;
  for (std::size_t i = first; i < entries.size(); ++i) {
    // The one extra checked sample a variant may get at the end is not part of the rotation.
    if (i + 3 > entries.size() && entries[i] != order[(i - first) % 3]) break;
    EXPECT_EQ(entries[i], order[(i - first) % 3]) << "sample " << i;
    ++samples;
  }
  // Each variant kept as many samples as the rounds taken.
  EXPECT_EQ(row_of(rows, "slow").samples, row_of(rows, "fast").samples);
  EXPECT_GE(samples / 3, row_of(rows, "slow").samples);
}

// As with one kernel, a hot sample whose fresh buffers overflow the caches (the fake device has
// 1 MiB of L2; each variant's x and y take 2 MiB at N = 2^18) flushes them, untimed, so that the
// variant does not pay their write-back.
TEST(PointRunnerVariants, AHotSampleWhoseFreshInputsOverflowTheCachesFlushesThem) {
  for (const int n : {1000, 1 << 18}) {
    SCOPED_TRACE(n);
    auto t = make_runner();
    auto j = variants_job(three_variants());
    j["sweep"]["N"] = {n};
    const auto rows = t.runner.measure_all(plan_of(j), 0, 7);
    ASSERT_EQ(rows.size(), 3u);
    for (const auto& r : rows)
      ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    const auto [samples, flushed] = testing::flushed_samples(t.fake->log);
    ASSERT_GT(samples, 9);
    // Verification's timed launches (a trial each) come before any refresh: not flushed.
    EXPECT_EQ(flushed, n == 1000 ? 0 : samples - 3 * 2);
  }
}

// Variants whose sets of buffers differ in size are batched alike: no more launches than the
// one with the fewest sets fitting half the caches may take, so that each carries the same
// share of the timing's own cost per launch.
TEST(PointRunnerVariants, VariantsAreBatchedAlike) {
  auto t = make_runner();
  for (const char* name : {"slow", "mid", "fast"})
    t.fake->kernel_time_us[name] = 1;      // 3 µs with the launch overhead: a batch of 17
  t.fake->info().l2_bytes = 2 * 5 * 8000;  // half of it: five sets of 1000 floats in x and y
  auto j = variants_job(three_variants());
  // "fast" takes a scratch buffer of 2000 floats more: 16,000 bytes a set, two sets in half L2.
  auto args = j["kernel"]["args"];
  args.push_back({{"name", "scratch"}, {"type", "f32*"}, {"count", "2*N"}});
  j["variants"][2]["args"] = args;
  const auto rows = t.runner.measure_all(plan_of(j), 0, 7);
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& r : rows) {
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    EXPECT_EQ(r.batch, 2) << r.variant.value_or("");
  }
  // On a device with a fixed cost to each sample, each held variant is read as its own free
  // batch would read it, alike: 3 µs a launch and 6 µs a sample, batches of 6 (the probes read
  // 9 µs).
  auto costly = make_runner();
  for (const char* name : {"slow", "mid", "fast"})
    costly.fake->kernel_time_us[name] = 1;
  costly.fake->info().l2_bytes = t.fake->info().l2_bytes;
  costly.fake->sample_fixed_us = 6;
  for (const auto& r : costly.runner.measure_all(plan_of(j), 0, 8)) {
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    EXPECT_EQ(r.batch, 2) << r.variant.value_or("");
    ASSERT_TRUE(r.batch_corrected) << r.variant.value_or("");
    EXPECT_EQ(r.batch_corrected->free_batch, 6) << r.variant.value_or("");
    EXPECT_NEAR(r.time_us->median, 4, 1e-9) << r.variant.value_or("");
    ASSERT_TRUE(r.comparison && r.comparison->over_slowest);
    EXPECT_NEAR(r.comparison->over_slowest->speedup, 1, 1e-9) << r.variant.value_or("");
  }
}

// The variants get the same inputs sample by sample, so local memory is scrubbed between one
// variant's launches and the next's: none finds what another left there.
TEST(PointRunnerVariants, LocalMemoryIsScrubbedBetweenTheVariantsLaunches) {
  auto t = make_runner();
  (void)t.runner.measure_all(plan_of(variants_job(three_variants())), 0, 7);
  const auto& log = t.fake->log;
  std::string last;  // the variant whose launches local memory may hold
  std::size_t switches = 0;
  for (const auto& line : log) {
    if (line == "scrub") last.clear();
    if (line.rfind("launch ", 0) != 0) continue;
    const std::string entry = line.substr(7);
    if (entry == "scale") continue;  // the reference, before the scrubs of verification
    EXPECT_TRUE(last.empty() || last == entry) << entry << " launched after " << last;
    switches += last != entry;
    last = entry;
  }
  EXPECT_GT(switches, 30u);
}

TEST(PointRunnerVariants, EveryVariantRunsOnTheSameInputs) {
  auto t = make_runner();
  // Each launch records the sum of the x it was given.
  std::map<std::string, std::vector<double>> seen;
  for (const char* name : {"slow", "mid", "fast"}) {
    auto inner = t.fake->kernels[name];
    t.fake->kernels[name] = [&seen, name, inner](const fake_backend::host_args& a) {
      const int n = int(a.scalars[0]);
      const auto* x = static_cast<const float*>(a.buffers[0]);
      double sum = 0;
      for (int i = 0; i < n; ++i)
        sum += x[i];
      seen[name].push_back(sum);
      inner(a);
    };
  }
  (void)t.runner.measure_all(plan_of(variants_job(three_variants(), 2)), 0, 7);
  // Verification trials, warm-up and samples alike: the i-th launch of every variant saw the
  // same inputs, so the reference's answer for them is one answer (the extra checked sample a
  // variant may take at the end aside).
  const std::size_t n = std::min({seen["slow"].size(), seen["mid"].size(), seen["fast"].size()});
  ASSERT_GT(n, 20u);
  for (std::size_t i = 0; i + 1 < n; ++i) {
    EXPECT_EQ(seen["slow"][i], seen["mid"][i]) << "launch " << i;
    EXPECT_EQ(seen["slow"][i], seen["fast"][i]) << "launch " << i;
  }
  // And the inputs change between trials and samples (an extra, unchecked verification launch
  // runs on its trial's inputs).
  EXPECT_GT(std::set<double>(seen["slow"].begin(), seen["slow"].end()).size(), n / 2);
}

// Variants with the same reference share its answers: it runs once per trial, not once per
// trial and variant. A variant that changes what the reference is launched with (the scalar `a`
// it shares with the kernel) runs it for itself, and passes against its own answer.
TEST(PointRunnerVariants, VariantsWithTheSameReferenceRunItOncePerTrial) {
  auto t = make_runner();
  json variants = three_variants();
  json args = variants_job(variants)["kernel"]["args"];
  args[1]["value"] = 3.0;
  variants.push_back({{"name", "triple"}, {"entry", "mid"}, {"args", args}});
  // Samples enough that each variant draws checks past its kept answers: checks are drawn one
  // in eight from a key of the system's entropy, and in a run of 41 samples about one in 35
  // drew at most the one a kept answer takes.
  json job = variants_job(variants, 2);
  job["timing"]["min_samples"] = 200;
  const auto rows = t.runner.measure_all(plan_of(job), 0, 7);
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& r : rows) {
    const std::string name = r.variant.value_or("");
    EXPECT_EQ(r.status, point_status::ok) << name;
    EXPECT_EQ(r.verification.status, "passed") << name << ": " << r.verification.note;
    EXPECT_EQ(r.verification.trials, 2) << name;
    EXPECT_TRUE(r.flags.empty()) << name;
  }
  // Two trials for the three that share it, two for "triple"; the first drawn timed checks use
  // kept answers, and each variant's later ones and its last check, on inputs of their own, run
  // it after their sample.
  std::size_t checks = 0;
  for (const auto& r : rows)
    checks += std::size_t(r.verification.timed_checks);
  const auto runs = std::size_t(std::count(t.fake->log.begin(), t.fake->log.end(), "launch scale"));
  EXPECT_GE(runs, 4 + rows.size());
  EXPECT_LE(runs, 4 + checks);
}

TEST(PointRunnerVariants, SpeedupsOverTheSlowestAndTheBaselineWithIntervals) {
  auto t = make_runner();
  json j = variants_job(three_variants());
  j["baseline"] = "mid";
  const auto rows = t.runner.measure_all(plan_of(j), 0, 7);
  ASSERT_EQ(rows.size(), 3u);
  const auto& fast = row_of(rows, "fast");
  ASSERT_TRUE(fast.comparison);
  ASSERT_TRUE(fast.comparison->over_slowest);
  EXPECT_EQ(fast.comparison->over_slowest->over, "slow");
  EXPECT_NEAR(fast.comparison->over_slowest->speedup, 4.0, 1e-9);
  EXPECT_LE(fast.comparison->over_slowest->ci95_low.value(), 4.0);
  EXPECT_GE(fast.comparison->over_slowest->ci95_high.value(), 4.0);
  ASSERT_TRUE(fast.comparison->over_baseline);
  EXPECT_EQ(fast.comparison->over_baseline->over, "mid");
  EXPECT_NEAR(fast.comparison->over_baseline->speedup, 2.0, 1e-9);
  // The fitness of a variant is over the baseline variant.
  ASSERT_TRUE(fast.fitness.speedup);
  EXPECT_NEAR(*fast.fitness.speedup, 2.0, 1e-9);
  ASSERT_TRUE(fast.fitness.speedup_ci95);
  EXPECT_NEAR(fast.fitness.combined_score, 2.0, 1e-9);  // correct, no target: the speedup
  // The slowest is 1x itself; the baseline is 1x itself.
  EXPECT_NEAR(row_of(rows, "slow").comparison->over_slowest->speedup, 1.0, 1e-12);
  EXPECT_NEAR(row_of(rows, "slow").comparison->over_baseline->speedup, 0.5, 1e-9);
  EXPECT_NEAR(row_of(rows, "mid").comparison->over_baseline->speedup, 1.0, 1e-12);
}

TEST(PointRunnerVariants, WithoutABaselineOnlyTheSlowestIsCompared) {
  auto t = make_runner();
  const auto rows = t.runner.measure_all(plan_of(variants_job(three_variants())), 0, 7);
  for (const auto& r : rows) {
    ASSERT_TRUE(r.comparison && r.comparison->over_slowest);
    const auto& s = *r.comparison->over_slowest;
    EXPECT_EQ(s.over, "slow");
    EXPECT_LE(s.ci95_low.value(), s.speedup);
    EXPECT_GE(s.ci95_high.value(), s.speedup);
    EXPECT_FALSE(r.comparison->over_baseline);
    EXPECT_FALSE(r.fitness.speedup);
  }
}

// The slowest variant, which the others are compared with, is the slowest by the paired ratios
// the comparison reports, not by the medians alone: where they disagree, a variant would read
// slower than "the slowest" (a speedup over it under 1).
TEST(PointRunnerVariants, NoVariantReadsSlowerThanTheSlowest) {
  auto t = make_runner();
  fake_backend* fake = t.fake;
  // Per round of samples (both variants timed once), the device time of each: "a" is slower in
  // three rounds of five by 4%, "b" far slower in the other two. By medians "a" is the slower
  // (14 µs against 12.5, with the launch overhead); pair by pair "b" is.
  const double a_us[] = {10, 11, 12, 13, 14}, b_us[] = {10.5, 11.5, 12.5, 1, 1};
  auto round = [fake] {
    const auto n = std::count(fake->log.begin(), fake->log.end(), "sample candidate");
    return std::size_t(std::max<std::ptrdiff_t>(0, n - 1) / 2) % 5;
  };
  for (const auto& [entry, times] : {std::pair{"a", a_us}, std::pair{"b", b_us}}) {
    fake->kernels[entry] = [fake, entry = std::string(entry), times, round,
                            scale = fake->kernels["scale"]](const fake_backend::host_args& a) {
      scale(a);
      fake->kernel_time_us[entry] = times[round()];
    };
  }
  json j =
      variants_job(json::array({{{"name", "a"}, {"entry", "a"}}, {{"name", "b"}, {"entry", "b"}}}));
  j["timing"] = {{"l2", "cold"}, {"min_samples", 25}, {"max_samples", 25}};
  const auto rows = t.runner.measure_all(plan_of(j), 0, 7);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& r : rows) {
    ASSERT_EQ(r.status, point_status::ok) << (r.error ? r.error->message : "");
    ASSERT_EQ(r.samples, 25u);
  }
  ASSERT_GT(row_of(rows, "a").time_us->median, row_of(rows, "b").time_us->median);
  for (const auto& r : rows) {
    ASSERT_TRUE(r.comparison && r.comparison->over_slowest);
    EXPECT_EQ(r.comparison->over_slowest->over, "b") << *r.variant;
    EXPECT_GE(r.comparison->over_slowest->speedup, 1.0) << *r.variant;
  }
  EXPECT_NEAR(row_of(rows, "a").comparison->over_slowest->speedup, 14.5 / 14, 1e-9);
}

TEST(PointRunnerVariants, AVariantThatDoesNotCompileFailsAloneAndTheOthersAreMeasured) {
  auto t = make_runner();
  json variants = three_variants();
  variants[1]["entry"] = "missing";
  json j = variants_job(variants);
  j["baseline"] = "slow";
  const auto rows = t.runner.measure_all(plan_of(j), 0, 7);
  ASSERT_EQ(rows.size(), 3u);
  const auto& mid = row_of(rows, "mid");
  ASSERT_EQ(mid.status, point_status::failed);
  EXPECT_EQ(mid.error->type, "compile_error");
  EXPECT_EQ(mid.error->message, "no kernel named missing");
  EXPECT_FALSE(mid.comparison);
  EXPECT_EQ(row_of(rows, "slow").status, point_status::ok);
  EXPECT_EQ(row_of(rows, "fast").status, point_status::ok);
  EXPECT_NEAR(row_of(rows, "fast").comparison->over_baseline->speedup, 4.0, 1e-9);
  // The failed variant was never sampled.
  const auto entries = sampled_entries(t.fake->log);
  EXPECT_EQ(std::count(entries.begin(), entries.end(), "missing"), 0);
  EXPECT_GT(std::count(entries.begin(), entries.end(), "fast"), 10);
  EXPECT_EQ(t.fake->live_buffers(), 0u);
}

TEST(PointRunnerVariants, AVariantWhoseLaunchIsRefusedWhenTimedFailsAloneAndTheOthersAreMeasured) {
  auto t = make_runner();
  // No reference: the first launch is the warm-up's. The device refuses "mid"'s (as OpenCL does
  // a work-group asking for more local memory than there is).
  json j = variants_job(three_variants());
  j["kernel"].erase("reference");
  j["baseline"] = "slow";
  t.fake->fail_entry["mid"] = fault_kind::invalid_launch;
  const auto rows = t.runner.measure_all(plan_of(j), 0, 7);
  ASSERT_EQ(rows.size(), 3u);
  const auto& mid = row_of(rows, "mid");
  ASSERT_EQ(mid.status, point_status::failed);
  EXPECT_EQ(mid.error->type, "invalid_point");
  EXPECT_EQ(mid.error->message, "launch mid failed (injected)");
  for (const char* ok : {"slow", "fast"})
    ASSERT_EQ(row_of(rows, ok).status, point_status::ok) << ok;
  EXPECT_NEAR(row_of(rows, "fast").comparison->over_baseline->speedup, 4.0, 1e-9);
  EXPECT_EQ(t.fake->live_buffers(), 0u);

  // Where the one refused is the baseline, the others are still compared with the slowest.
  t.fake->fail_entry = {{"slow", fault_kind::invalid_launch}};
  const auto again = t.runner.measure_all(plan_of(j), 0, 7);
  EXPECT_EQ(row_of(again, "slow").error->message, "launch slow failed (injected)");
  EXPECT_FALSE(row_of(again, "fast").comparison->over_baseline);
  EXPECT_NEAR(row_of(again, "fast").comparison->over_slowest->speedup, 2.0, 1e-9);
}

TEST(PointRunnerVariants, AVariantThatFailsVerificationIsFlaggedAlone) {
  auto t = make_runner();
  json variants = three_variants();
  variants[2]["entry"] = "wrong";
  const auto rows = t.runner.measure_all(plan_of(variants_job(variants)), 0, 7);
  const auto& wrong = row_of(rows, "fast");
  EXPECT_EQ(wrong.verification.status, "failed");
  EXPECT_NE(std::find(wrong.flags.begin(), wrong.flags.end(), "verification_failed"),
            wrong.flags.end());
  EXPECT_FALSE(wrong.fitness.correct);
  EXPECT_EQ(wrong.fitness.combined_score, 0.0);
  for (const char* ok : {"slow", "mid"}) {
    EXPECT_EQ(row_of(rows, ok).verification.status, "passed") << ok;
    EXPECT_TRUE(row_of(rows, ok).flags.empty()) << ok;
  }
}

TEST(PointRunnerVariants, AFaultThatLosesTheDeviceFailsEveryVariant) {
  auto t = make_runner();
  t.fake->fail_on["synchronize"] = fault_kind::device_lost;
  const auto rows = t.runner.measure_all(plan_of(variants_job(three_variants())), 0, 7);
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& r : rows) {
    ASSERT_EQ(r.status, point_status::failed) << *r.variant;
    EXPECT_EQ(r.error->type, "device_fault") << *r.variant;
  }
  EXPECT_TRUE(t.runner.needs_restart());
}

TEST(PointRunnerVariants, AllVariantsMustFitTheDeviceTogether) {
  auto t = make_runner();
  t.fake->free_bytes = 3 * 8000;  // one variant's x and y (and a reference copy), not three
  const auto rows = t.runner.measure_all(plan_of(variants_job(three_variants())), 0, 7);
  for (const auto& r : rows) {
    ASSERT_EQ(r.status, point_status::failed);
    EXPECT_EQ(r.error->type, "out_of_memory");
    EXPECT_NE(r.error->message.find("3 variants"), std::string::npos) << r.error->message;
  }
}

TEST(PointRunnerVariants, AJobWithoutVariantsGivesOneRowWithoutAVariant) {
  auto t = make_runner();
  json j = variants_job(three_variants());
  j.erase("variants");
  j["kernel"]["entry"] = "fast";
  const auto rows = t.runner.measure_all(plan_of(j), 0, 7);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].variant);
  EXPECT_FALSE(rows[0].comparison);
  EXPECT_EQ(rows[0].status, point_status::ok);
}

TEST(PointRunnerVariants, OnTheMockTheSpeedupsHaveIntervalsFromNoisySamples) {
  mock_engine mock(*find_device_model("MI300X"), 0);
  const auto plan = plan_of(json::parse(R"({
    "kernel": {"op": "gemm", "m": "N", "n": "N", "k": "N", "dtype": "f16"},
    "variants": [{"name": "library"}, {"name": "builtin", "impl": "builtin"},
                 {"name": "f32", "dtype": "f32"}],
    "baseline": "builtin",
    "sweep": {"N": [4096]}
  })"));
  const auto rows = mock.measure_all(plan, 0, 11);
  ASSERT_EQ(rows.size(), 3u);
  const auto& library = row_of(rows, "library");
  ASSERT_EQ(library.status, point_status::ok);
  ASSERT_TRUE(library.comparison && library.comparison->over_baseline);
  const auto& s = *library.comparison->over_baseline;
  EXPECT_EQ(s.over, "builtin");
  // The model's library GEMM is far faster than its builtin one at this size.
  EXPECT_GT(s.speedup, 1.5);
  EXPECT_LT(s.ci95_low.value(), s.speedup);
  EXPECT_GT(s.ci95_high.value(), s.speedup);
  EXPECT_NEAR(s.speedup, row_of(rows, "builtin").time_us->median / library.time_us->median,
              0.05 * s.speedup);
  EXPECT_TRUE(library.simulated);
  EXPECT_EQ(row_of(rows, "builtin").comparison->over_slowest->over,
            row_of(rows, "f32").time_us->median > row_of(rows, "builtin").time_us->median
                ? "f32"
                : "builtin");
}

}  // namespace
}  // namespace kernelscan

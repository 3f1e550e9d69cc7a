// `kernelscan compare`: jobs, or the variants of one job, joined on their shared parameters.
#include <gtest/gtest.h>

#include "server/cli_compare.hpp"

namespace kernelscan {
namespace {

json row(json params, double median, double half_ci, const char* variant = nullptr,
         const char* status = "ok") {
  json r = {
      {"params", std::move(params)},
      {"status", status},
      {"time_us",
       {{"median", median}, {"ci95_low", median - half_ci}, {"ci95_high", median + half_ci}}}};
  if (variant) r["variant"] = variant;
  return r;
}

TEST(CompareReport, JobsJoinOnSharedParametersWithVerdicts) {
  const json a = json::array(
      {row({{"N", 1024}}, 10, 0.1), row({{"N", 2048}}, 40, 0.1), row({{"N", 4096}}, 160, 1)});
  // The second job also sweeps T: its best T stands for each N.
  const json b = json::array(
      {row({{"N", 1024}, {"T", 16}}, 5, 0.1), row({{"N", 1024}, {"T", 32}}, 8, 0.1),
       row({{"N", 2048}, {"T", 16}}, 40.05, 0.2), row({{"N", 4096}, {"T", 16}}, 320, 1)});
  const auto series = series_of({{json{{"id", 12}}, a}, {json{{"id", 15}}, b}});
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[1].label, "job 15");
  const std::string report = compare_report(series, "");
  EXPECT_NE(report.find("baseline  job 12\njoined on N\n"), std::string::npos) << report;
  EXPECT_NE(report.find("2.00x faster"), std::string::npos) << report;  // 10 / 5 at N=1024
  EXPECT_NE(report.find("1.00x same"), std::string::npos) << report;    // overlapping CIs
  EXPECT_NE(report.find("0.50x slower"), std::string::npos) << report;
  EXPECT_NE(report.find("job 15: 1.00x the speed of job 12 (geometric mean over 3 points): 1 "
                        "faster, 1 slower, 1 the same"),
            std::string::npos)
      << report;

  const std::string flipped = compare_report(series, "job 15");
  EXPECT_NE(flipped.find("baseline  job 15"), std::string::npos) << flipped;
  EXPECT_NE(flipped.find("0.50x slower"), std::string::npos) << flipped;
  EXPECT_THROW(compare_report(series, "job 99"), std::invalid_argument);
}

// A point without an interval of its median (fewer than 6 samples, a summary import) is never
// called faster or slower, however far apart the medians: there is nothing to tell them apart
// by. Its median is shown without "±".
TEST(CompareReport, APointWithoutAnIntervalIsNeitherFasterNorSlower) {
  json few = row({{"N", 1024}}, 5, 0);
  few["time_us"].erase("ci95_low");
  few["time_us"].erase("ci95_high");
  const json a = json::array({row({{"N", 1024}}, 10, 0.1)});
  const std::string report =
      compare_report(series_of({{json{{"id", 1}}, a}, {json{{"id", 2}}, json::array({few})}}), "");
  EXPECT_NE(report.find("1024  10.00 ±0.10     5.000  2.00x same\n"), std::string::npos) << report;
  EXPECT_NE(report.find(": 0 faster, 0 slower, 1 the same"), std::string::npos) << report;
}

// Where the jobs measured different sizes, the rows run in ascending order of the joined
// parameters, not the first job's sizes followed by the second's.
TEST(CompareReport, RowsAreInAscendingOrderOfTheJoinedParameters) {
  const json a = json::array({row({{"N", 1024}}, 10, 0.1), row({{"N", 4096}}, 40, 0.1)});
  const json b = json::array(
      {row({{"N", 1024}}, 10, 0.1), row({{"N", 3072}}, 30, 0.1), row({{"N", 16384}}, 160, 0.1)});
  const std::string report =
      compare_report(series_of({{json{{"id", 1}}, a}, {json{{"id", 2}}, b}}), "");
  const auto at = [&](const char* n) { return report.find(std::string("\n") + n + "  "); };
  ASSERT_NE(at(" 1024"), std::string::npos) << report;
  EXPECT_LT(at(" 1024"), at(" 3072")) << report;
  EXPECT_LT(at(" 3072"), at(" 4096")) << report;
  EXPECT_LT(at(" 4096"), at("16384")) << report;
}

TEST(CompareReport, OneJobComparesItsVariants) {
  const json rows =
      json::array({row({{"N", 64}}, 100, 1, "naive"), row({{"N", 64}}, 20, 1, "tiled"),
                   row({{"N", 128}}, 800, 1, "naive"), row({{"N", 128}}, 0, 0, "tiled", "failed")});
  const auto series = series_of({{json{{"id", 3}}, rows}});
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].label, "naive");
  EXPECT_EQ(series[1].label, "tiled");
  const std::string report = compare_report(series, "naive");
  EXPECT_NE(report.find("5.00x faster"), std::string::npos) << report;
  // The failed point has no time, so nothing to compare there.
  EXPECT_NE(report.find("tiled: 5.00x the speed of naive (geometric mean over 1 point)"),
            std::string::npos)
      << report;
}

// Variants measured against each other have the daemon's paired ratios of their interleaved
// samples in their rows: those are the speedups, as the job's report gives them, not the ratio of
// the medians (which reads otherwise where the samples drifted together).
TEST(CompareReport, VariantsAreComparedByTheirPairedRatios) {
  const auto over = [](const char* variant, double speedup, double lo, double hi) {
    return json{{"variant", variant}, {"speedup", speedup}, {"ci95", {lo, hi}}};
  };
  json naive64 = row({{"N", 64}}, 100, 5, "naive"), tiled64 = row({{"N", 64}}, 80, 5, "tiled");
  json fast64 = row({{"N", 64}}, 90, 5, "fast");
  naive64["comparison"] = {{"over_baseline", over("naive", 1, 1, 1)},
                           {"over_slowest", over("naive", 1, 1, 1)}};
  tiled64["comparison"] = {{"over_baseline", over("naive", 1.10, 1.05, 1.15)},
                           {"over_slowest", over("naive", 1.10, 1.05, 1.15)}};
  fast64["comparison"] = {{"over_baseline", over("naive", 0.97, 0.9, 1.02)},
                          {"over_slowest", over("naive", 0.97, 0.9, 1.02)}};
  const auto series = series_of({{json{{"id", 3}}, json::array({naive64, tiled64, fast64})}});
  const std::string report = compare_report(series, "naive");
  // 1.10 paired, where the medians' 100 / 80 would read 1.25 and their overlapping intervals
  // "same"; the paired interval leaves out 1: faster.
  EXPECT_NE(report.find("1.10x faster"), std::string::npos) << report;
  EXPECT_NE(report.find("0.97x same"), std::string::npos) << report;
  EXPECT_NE(report.find("speedups are the median of the paired ratios"), std::string::npos)
      << report;
  // Against tiled: its speedup over naive inverts for naive's over it; fast and tiled were
  // never measured against each other, and take the ratio of their medians.
  const std::string flipped = compare_report(series, "tiled");
  EXPECT_NE(flipped.find("0.91x slower"), std::string::npos) << flipped;  // 1 / 1.10
  EXPECT_NE(flipped.find("else the ratio of the medians (1 pair)"), std::string::npos) << flipped;
  EXPECT_NE(flipped.find("0.89x same"), std::string::npos) << flipped;  // 80 / 90

  // Paired from fewer than 6 pairs: a speedup without an interval decides nothing, either way
  // round.
  json few64 = row({{"N", 64}}, 60, 5, "few");
  few64["comparison"] = {
      {"over_baseline", {{"variant", "naive"}, {"speedup", 1.5}, {"ci95", nullptr}}},
      {"over_slowest", nullptr}};
  const auto with_few =
      series_of({{json{{"id", 3}}, json::array({naive64, tiled64, fast64, few64})}});
  EXPECT_NE(compare_report(with_few, "naive").find("1.50x same"), std::string::npos)
      << compare_report(with_few, "naive");
  EXPECT_NE(compare_report(with_few, "few").find("0.67x same"), std::string::npos)
      << compare_report(with_few, "few");
}

TEST(CompareReport, SaysWhatCannotBeCompared) {
  const json plain = json::array({row({{"N", 64}}, 100, 1)});
  EXPECT_THROW(series_of({{json{{"id", 3}}, plain}}), std::invalid_argument);
  // A job named twice would be two columns of one label, compared with itself.
  try {
    series_of({{json{{"id", 3}}, plain}, {json{{"id", 4}}, plain}, {json{{"id", 3}}, plain}});
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "ID: job 3 is named twice");
  }
  const auto series = series_of({{json{{"id", 1}}, json::array({row({{"N", 1}}, 1, 0)})},
                                 {json{{"id", 2}}, json::array({row({{"N", 2}}, 1, 0)})}});
  try {
    compare_report(series, "");
    ADD_FAILURE();
  } catch (const nothing_to_compare& e) {
    EXPECT_STREQ(e.what(), "no measured point is shared by job 1, job 2 (shared parameters: N)");
  }
}

// Jobs of one op whose fixed fields differ (the dtype, a size no shared parameter sets) measure
// different problems at a matched point: the report says which field and how, above the table.
// An implementation's fields (impl) are what a comparison is for, and are not listed.
TEST(CompareReport, FixedFieldsAndDtypesThatDifferAreSaidAboveTheTable) {
  const json rows = json::array({row({{"M", 1024}}, 10, 0.1)});
  auto gemm = [](const char* dtype, int k, const char* impl) {
    return json{
        {"kernel",
         {{"op", "gemm"}, {"m", "M"}, {"n", "M"}, {"k", k}, {"dtype", dtype}, {"impl", impl}}}};
  };
  auto report = [&](const json& a, const json& b) {
    return compare_report(
        series_of({{json{{"id", 1}, {"spec", a}}, rows}, {json{{"id", 2}, {"spec", b}}, rows}}),
        "");
  };
  const std::string differ = report(gemm("f16", 4096, "library"), gemm("f32", 2048, "builtin"));
  EXPECT_NE(differ.find("warning: matched on the parameter names only"), std::string::npos)
      << differ;
  EXPECT_NE(differ.find("  - kernel.dtype is f16 in job 1; f32 in job 2\n"), std::string::npos)
      << differ;
  EXPECT_NE(differ.find("  - kernel.k is 4096 in job 1; 2048 in job 2\n"), std::string::npos)
      << differ;
  EXPECT_EQ(differ.find("impl"), std::string::npos) << differ;
  // Only the implementation differs: no warning.
  const std::string alike = report(gemm("f16", 4096, "library"), gemm("f16", 4096, "builtin"));
  EXPECT_EQ(alike.find("warning"), std::string::npos) << alike;

  // Custom kernels: the element types of their buffers.
  auto custom = [](const char* type) {
    return json{{"kernel",
                 {{"op", "custom"},
                  {"args", json::array({{{"name", "x"}, {"type", std::string(type) + "*"}},
                                        {{"name", "n"}, {"type", "i32"}}})}}}};
  };
  const std::string types = report(custom("f32"), custom("f16"));
  EXPECT_NE(types.find("  - the element type of the buffers is f32 in job 1; f16 in job 2\n"),
            std::string::npos)
      << types;
  EXPECT_EQ(report(custom("f32"), custom("f32")).find("warning"), std::string::npos);
}

TEST(CompareReport, TheBestPointOfAnUnsharedParameterIsTheHighestThroughputNotTheSmallest) {
  // Job 1 sweeps M as well: at N=64, M=64 is the fastest but M=1024 does the most per second.
  auto with_flops = [](json r, double flops) {
    r["metrics"] = {{"flops", flops}};
    return r;
  };
  const json gemm_mn =
      json::array({with_flops(row({{"M", 64}, {"N", 64}}, 10, 0.1), 64 * 64 * 2),
                   with_flops(row({{"M", 1024}, {"N", 64}}, 40, 0.1), 1024 * 64 * 2)});
  const json gemm_n = json::array({with_flops(row({{"N", 64}}, 20, 0.1), 64 * 64 * 2)});
  json spec_mn = {{"kernel", {{"op", "gemm"}, {"m", "M"}, {"n", "N"}, {"k", 64}}}};
  json spec_n = {{"kernel", {{"op", "gemm"}, {"m", "N"}, {"n", "N"}, {"k", "N"}}}};
  const auto series = series_of(
      {{json{{"id", 1}, {"spec", spec_mn}}, gemm_mn}, {json{{"id", 5}, {"spec", spec_n}}, gemm_n}});
  const std::string report = compare_report(series, "job 5");
  // Job 1 at N=64 is its M=1024 point: 40 µs against job 5's 20, for 16 times the FLOPs. The
  // speedup is of throughput, and said to be.
  EXPECT_NE(report.find("8.00x faster *"), std::string::npos) << report;
  EXPECT_NE(report.find("* the two points do different work"), std::string::npos) << report;
  // N sets different fields in the two jobs: said above the table.
  EXPECT_NE(report.find("warning: matched on the parameter names only"), std::string::npos)
      << report;
  EXPECT_NE(report.find("N sets kernel.n in job 1; kernel.m, kernel.n, kernel.k in job 5"),
            std::string::npos)
      << report;
  // Jobs that use N alike get no warning.
  const auto alike = series_of(
      {{json{{"id", 5}, {"spec", spec_n}}, gemm_n}, {json{{"id", 6}, {"spec", spec_n}}, gemm_n}});
  EXPECT_EQ(compare_report(alike, "").find("warning"), std::string::npos);
}

TEST(CompareReport, APointWhoseFlagsVoidItsScoreIsMarkedAndNotPickedOverASoundOne) {
  auto flagged = [](json r, const char* flag) {
    r["flags"] = json::array({flag});
    return r;
  };
  // Job 1 sweeps M too: at N=64 its faster point gave wrong answers; the sound one stands for it.
  const json one = json::array({flagged(row({{"M", 1}, {"N", 64}}, 5, 0.1), "verification_failed"),
                                row({{"M", 2}, {"N", 64}}, 30, 0.1)});
  // Job 2 has only a point faster than the roofline at N=64: shown, marked, and counted.
  const json two = json::array({flagged(row({{"N", 64}}, 10, 0.1), "faster_than_roofline")});
  const auto series = series_of({{json{{"id", 1}}, one}, {json{{"id", 2}}, two}});
  const std::string report = compare_report(series, "job 1");
  EXPECT_NE(report.find("30.00 ±0.10"), std::string::npos) << report;
  EXPECT_EQ(report.find("verification_failed"), std::string::npos) << report;
  EXPECT_NE(report.find("10.00 ±0.10 void: faster_than_roofline"), std::string::npos) << report;
  EXPECT_NE(report.find("1 of them with a point whose flags void its score"), std::string::npos)
      << report;
  // A warning flag voids nothing.
  const json three = json::array({flagged(row({{"N", 64}}, 10, 0.1), "excessive_speedup")});
  const auto warned = series_of({{json{{"id", 1}}, one}, {json{{"id", 3}}, three}});
  EXPECT_EQ(compare_report(warned, "job 1").find("void"), std::string::npos);
}

// --max-slowdown: a point slower beyond both intervals by more than the limit, a geometric mean
// below it, a point voided or failed where the baseline's was sound; noise and small slowdowns
// pass.
TEST(CompareReport, APerformanceGateNamesWhatBrokeIt) {
  const json base = json::array({row({{"N", 64}}, 10, 0.1), row({{"N", 128}}, 20, 0.1),
                                 row({{"N", 256}}, 40, 0.1), row({{"N", 512}}, 80, 0.1)});
  // N=64: 2% slower beyond the intervals; N=128: 20% slower, but within its own wide interval;
  // N=256: 10% slower; N=512 failed.
  json fail = row({{"N", 512}}, 0, 0, nullptr, "failed");
  const json next = json::array(
      {row({{"N", 64}}, 10.2, 0.05), row({{"N", 128}}, 24, 5), row({{"N", 256}}, 44.4, 0.1), fail});
  const auto series = series_of({{json{{"id", 1}}, base}, {json{{"id", 2}}, next}});
  std::vector<std::string> broken;
  compare_report(series, "", 0.05, &broken);
  EXPECT_EQ(broken, (std::vector<std::string>{"job 2 at N=256: 0.90x slower",
                                              "job 2 at N=512: failed where job 1 was measured",
                                              "job 2: 0.90x the speed of job 1 (geometric mean)"}));
  compare_report(series, "", 0.01, &broken);
  EXPECT_EQ(broken.front(), "job 2 at N=64: 0.98x slower");
  EXPECT_EQ(broken.size(), 4u);
  // Measured the same within the limit: nothing.
  const auto same = series_of({{json{{"id", 1}}, base}, {json{{"id", 3}}, base}});
  compare_report(same, "", 0.0, &broken);
  EXPECT_TRUE(broken.empty());

  // A slower point whose kernel's registers or occupancy changed says so: the likely cause.
  json fewer = row({{"N", 256}}, 40, 0.1);
  fewer["resources"] = {{"registers", 32}, {"occupancy", 1.0}};
  json more = row({{"N", 256}}, 48, 0.1);
  more["resources"] = {{"registers", 64}, {"occupancy", 0.5}};
  json same_regs = row({{"N", 64}}, 12, 0.1);
  same_regs["resources"] = {{"registers", 32}, {"occupancy", 1.0}};
  json base_regs = row({{"N", 64}}, 10, 0.1);
  base_regs["resources"] = {{"registers", 32}, {"occupancy", 1.0}};
  const auto spilled = series_of({{json{{"id", 1}}, json::array({base_regs, fewer})},
                                  {json{{"id", 5}}, json::array({same_regs, more})}});
  compare_report(spilled, "", 0.05, &broken);
  ASSERT_GE(broken.size(), 2u);
  EXPECT_EQ(broken[0], "job 5 at N=64: 0.83x slower");
  EXPECT_EQ(broken[1], "job 5 at N=256: 0.83x slower (registers 32 -> 64, occupancy 100% -> 50%)");

  json voided = row({{"N", 64}}, 5, 0.1);
  voided["flags"] = json::array({"verification_failed"});
  const auto wrong = series_of({{json{{"id", 1}}, json::array({row({{"N", 64}}, 10, 0.1)})},
                                {json{{"id", 4}}, json::array({voided})}});
  compare_report(wrong, "", 0.05, &broken);
  EXPECT_EQ(broken, (std::vector<std::string>{"job 4 at N=64: flags that void its score "
                                              "(verification_failed) where job 1's are sound"}));
}

}  // namespace
}  // namespace kernelscan

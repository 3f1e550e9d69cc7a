// The client's results report, on hand-built result rows (no daemon). Suite names start with
// `cli_` so `ctest -R cli` selects every client test.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "api/import_codec.hpp"
#include "api/json.hpp"
#include "api/result_codec.hpp"
#include "server/cli_report.hpp"
#include "server/detail/text_table.hpp"
#include "tests/support/import_samples.hpp"

namespace kernelscan {
namespace {

json params_of(const std::vector<std::pair<std::string, std::int64_t>>& params) {
  json p = json::object();
  for (const auto& [k, v] : params)
    p[k] = v;
  return p;
}

// An ok PointResult as the daemon stores it (fields from api/result_codec.cpp), its answers
// verified.
json ok_row(std::int64_t index, const std::vector<std::pair<std::string, std::int64_t>>& params,
            double median, double ci_low, double ci_high, double flops = 2e9, double bytes = 1e6) {
  const double seconds = median * 1e-6;
  return {{"index", index},
          {"params", params_of(params)},
          {"status", "ok"},
          {"time_us",
           {{"mean", median},
            {"median", median},
            {"min", median * 0.98},
            {"max", median * 1.2},
            {"stddev", median * 0.01},
            {"p5", median * 0.99},
            {"p95", median * 1.01},
            {"p99", median * 1.1},
            {"ci95_low", ci_low},
            {"ci95_high", ci_high},
            {"rel_noise", 0.001}}},
          {"samples", 100},
          {"discarded_samples", 0},
          {"converged", true},
          {"stop_reason", "noise_target"},
          {"sampling_ms", 10.0},
          {"batch", 1},
          {"l2", "cold"},
          {"metrics",
           {{"flops", flops},
            {"bytes", bytes},
            {"tflops", flops / seconds / 1e12},
            {"gbps", bytes / seconds / 1e9},
            {"arithmetic_intensity", bytes > 0 ? flops / bytes : 0.0},
            {"roof_tflops", 1307.4},
            {"roof_pct", 50.0},
            {"bound", "compute"},
            {"roof_source", "datasheet"}}},
          {"verification",
           {{"status", "passed"}, {"trials", 2}, {"max_abs_err", 0.0}, {"max_rel_err", 0.0}}},
          {"flags", json::array()},
          {"advice", json::array()},
          {"fitness", nullptr},
          {"environment",
           {{"device", "AMD Instinct MI300X (mock)"},
            {"driver", "kernelscan-mock"},
            {"clock_mhz", 2100.0}}}};
}

json failed_row(std::int64_t index, const std::vector<std::pair<std::string, std::int64_t>>& params,
                const std::string& type, const std::string& message) {
  json r = ok_row(index, params, 1, 1, 1);
  r["status"] = "failed";
  r["error"] = {{"type", type}, {"message", message}};
  r["time_us"] = nullptr;
  r["metrics"] = nullptr;
  r["samples"] = 0;
  r["stop_reason"] = nullptr;
  r["flags"] = json::array({type});
  return r;
}

json job_with(const json& sweep, const std::string& status, std::int64_t total) {
  return {{"id", 7},
          {"name", "f16 gemm"},
          {"labels", {{"team", "perf"}}},
          {"status", status},
          {"op", "gemm"},
          {"priority", 0},
          {"engine", "auto"},
          {"requested_device", "any"},
          {"device", 0},
          {"progress", {{"done", total}, {"total", total}, {"ok", total}, {"failed", 0}}},
          {"created_at", "2025-01-31T12:00:00.123Z"},
          {"started_at", "2025-01-31T12:00:00.130Z"},
          {"finished_at", "2025-01-31T12:00:01.000Z"},
          {"cancel_requested", false},
          {"error", nullptr},
          {"summary", {{"best", nullptr}, {"fitness", nullptr}}},
          {"spec",
           {{"kernel",
             {{"op", "gemm"},
              {"m", "M"},
              {"n", "N"},
              {"k", 4096},
              {"dtype", "f16"},
              {"layout_a", "row"},
              {"layout_b", "col"},
              {"impl", "library"}}},
            {"sweep", sweep}}}};
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

// The line whose text starts (after blanks) with `first`.
std::string line_starting(const std::string& text, const std::string& first) {
  for (const auto& l : lines_of(text)) {
    const auto at = l.find_first_not_of(' ');
    if (at != std::string::npos && l.compare(at, first.size(), first) == 0) return l;
  }
  return "";
}

TEST(cli_report, OneParameterGivesPlainRowsAndNoSpeedupBetweenSizes) {
  const json job = job_with({{"N", {1024, 2048, 4096}}}, "succeeded", 3);
  const json rows = json::array({ok_row(0, {{"N", 1024}}, 10, 9.99, 10.01),
                                 ok_row(1, {{"N", 2048}}, 20, 19.9, 20.1),
                                 ok_row(2, {{"N", 4096}}, 40, 39.5, 40.5)});
  const std::string report = results_report(job, rows);
  // The whole report, to pin down layout: header, right-aligned numbers, footer.
  EXPECT_EQ(report,
            "job 7 \"f16 gemm\": succeeded\n"
            "kernel  gemm f16, m=M n=N k=4096 (row x col, library)\n"
            "device  0: AMD Instinct MI300X (mock)\n"
            "points  3 of 3 measured: 3 ok, 0 failed\n"
            "labels  team=perf\n"
            "\n"
            "   N  status  median µs  95% CI  TFLOP/s   GB/s   roof  bound\n"
            "1024  ok          10.00  ±0.010    200.0  100.0  50.0%  compute\n"
            "2048  ok          20.00   ±0.10    100.0  50.00  50.0%  compute\n"
            "4096  ok          40.00   ±0.50    50.00  25.00  50.0%  compute\n"
            "\n"
            "best    N=1024: 10.00 µs, 200.0 TFLOP/s, 100.0 GB/s, 50.0% of roof (compute bound)\n")
      << report;
}

// The best point's advice follows the best line, one piece a line, none from the other points.
TEST(cli_report, TheBestPointsAdviceFollowsIt) {
  const json job = job_with({{"N", {1024, 2048}}}, "succeeded", 2);
  json rows = json::array(
      {ok_row(0, {{"N", 1024}}, 10, 9.99, 10.01), ok_row(1, {{"N", 2048}}, 30, 29.9, 30.1)});
  rows[0]["advice"] = {"memory-bound at 89% of bandwidth: only less traffic helps now",
                       "faster than the measured bandwidth ceiling (35.1 GB/s): measured\nagain"};
  rows[1]["advice"] = {"compute-bound at 20% of peak"};
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("best    N=1024: 10.00 µs, 200.0 TFLOP/s, 100.0 GB/s, 50.0% of roof "
                        "(compute bound)\n"
                        "advice  memory-bound at 89% of bandwidth: only less traffic helps now\n"
                        "        faster than the measured bandwidth ceiling (35.1 GB/s): measured "
                        "again\n"),
            std::string::npos)
      << report;
  EXPECT_EQ(report.find("compute-bound at 20%"), std::string::npos) << report;
}

// A job the result cache answered says which job measured its points, and how to measure again.
TEST(cli_report, AJobAnsweredFromTheCacheSaysSo) {
  json job = job_with({{"N", {1024}}}, "succeeded", 1);
  const json rows = json::array({ok_row(0, {{"N", 1024}}, 10, 9.99, 10.01)});
  EXPECT_EQ(results_report(job, rows).find("result cache"), std::string::npos);
  job["cached_from"] = 3;
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("note    from the result cache: job 3 measured these points; kernelscan "
                        "rerun 7 measures them again\n"),
            std::string::npos)
      << report;
}

TEST(cli_report, SimulatedRowsAreSaidToBeSo) {
  const json job = job_with({{"N", {1024, 2048}}}, "succeeded", 2);
  json rows = json::array(
      {ok_row(0, {{"N", 1024}}, 10, 9.99, 10.01), ok_row(1, {{"N", 2048}}, 20, 19.9, 20.1)});
  EXPECT_EQ(line_starting(results_report(job, rows), "note"), "");
  rows[1]["simulated"] = true;
  EXPECT_EQ(line_starting(results_report(job, rows), "note"),
            "note    simulated: the mock engine's times come from a model of the device; the "
            "kernel was not compiled, run or verified");
}

// Wrong answers are counted on the points line; answers nobody checked get a note, once.
TEST(cli_report, VerificationFailuresAreCountedAndUncheckedAnswersNoted) {
  const json job = job_with({{"N", {1024, 2048, 4096}}}, "succeeded", 3);
  json rows = json::array({ok_row(0, {{"N", 1024}}, 10, 9.99, 10.01),
                           ok_row(1, {{"N", 2048}}, 20, 19.9, 20.1),
                           ok_row(2, {{"N", 4096}}, 40, 39.9, 40.1)});
  rows[1]["verification"]["status"] = "failed";
  rows[1]["flags"] = {"verification_failed"};
  rows[2]["flags"] = {"timed_output_mismatch"};
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("points  3 of 3 measured: 3 ok (2 failed verification), 0 failed\n"),
            std::string::npos)
      << report;
  EXPECT_TRUE(failed_verification(rows[1]));
  EXPECT_TRUE(failed_verification(rows[2]));
  EXPECT_FALSE(failed_verification(rows[0]));
  EXPECT_EQ(line_starting(report, "note"), "");

  json unchecked = json::array(
      {ok_row(0, {{"N", 1024}}, 10, 9.99, 10.01), ok_row(1, {{"N", 2048}}, 20, 19.9, 20.1)});
  for (auto& r : unchecked)
    r["verification"] = {{"status", "skipped"},
                         {"trials", 0},
                         {"note", "the kernel has no reference to compare with"}};
  EXPECT_EQ(line_starting(results_report(job, unchecked), "note"),
            "note    not verified (the kernel has no reference to compare with): \"ok\" says that "
            "a point ran, not that its answers are right");
  unchecked[0]["verification"]["status"] = "passed";
  EXPECT_EQ(line_starting(results_report(job, unchecked), "note"),
            "note    1 ok point not verified (the kernel has no reference to compare with): \"ok\" "
            "says that a point ran, not that its answers are right");
  // Simulated rows say so in a note of their own.
  for (auto& r : unchecked)
    r["simulated"] = true;
  EXPECT_EQ(line_starting(results_report(job, unchecked), "note").rfind("note    simulated: ", 0),
            0u);
}

// A compiler's log is shown once, beneath the table, in the user's file's name.
TEST(cli_report, AnErrorOfManyLinesIsShownOnceBeneathTheTable) {
  json job = job_with({{"N", {1, 2}}}, "failed", 2);
  const std::string log =
      "the kernel did not compile (CL_BUILD_PROGRAM_FAILURE (-11)):\n"
      "error: kernel.cl:3:30: use of undeclared identifier 'x'\n"
      "Device cpu failed to build the program";
  job["error"] = {{"type", "points_failed"},
                  {"message", "all 2 points failed; the first, point 0: compile_error: " + log}};
  const json rows = json::array({failed_row(0, {{"N", 1}}, "compile_error", log),
                                 failed_row(1, {{"N", 2}}, "compile_error", log)});
  const std::string report = results_report(job, rows, "src/my.cl");
  EXPECT_EQ(line_starting(report, "error"),
            "error   points_failed: all 2 points failed; the first, point 0: compile_error: the "
            "kernel did not compile (CL_BUILD_PROGRAM_FAILURE (-11)) (log below)");
  EXPECT_EQ(line_starting(report, "2  "),
            "2  failed  compile_error: the kernel did not compile (CL_BUILD_PROGRAM_FAILURE (-11)) "
            "(log below)");
  EXPECT_NE(report.find("\ncompile_error at N=1; N=2:\n"
                        "  error: src/my.cl:3:30: use of undeclared identifier 'x'\n"
                        "  Device cpu failed to build the program\n"
                        "\n"
                        "best    none: no point succeeded\n"),
            std::string::npos)
      << report;
  EXPECT_EQ(report.find("kernel.cl"), std::string::npos) << report;
  // Without a file name, the engine's name stays.
  EXPECT_NE(results_report(job, rows).find("  error: kernel.cl:3:30: "), std::string::npos);
}

TEST(cli_report, RowsReadAsTheirFreeBatchAreSaidToBeSo) {
  const json job = job_with({{"N", {1024, 2048}}}, "succeeded", 2);
  json rows = json::array(
      {ok_row(0, {{"N", 1024}}, 10, 9.99, 10.01), ok_row(1, {{"N", 2048}}, 20, 19.9, 20.1)});
  rows[0]["batch_correction"] = nullptr;
  EXPECT_EQ(line_starting(results_report(job, rows), "note"), "");
  rows[1]["batch_correction"] = {{"free_batch", 9}, {"fixed_cost_us", 1.3}, {"us", 0.5}};
  EXPECT_EQ(line_starting(results_report(job, rows), "note"),
            "note    1 row timed in hot batches held short by their buffer sets, read as the free "
            "batch would read them (batch_correction)");
}

TEST(cli_report, TwoParametersGiveOneSectionPerValueOfTheFirst) {
  const json job = job_with({{"M", {1024, 2048}}, {"N", {256, 512, 1024}}}, "succeeded", 6);
  json rows = json::array();
  std::int64_t index = 0;
  for (std::int64_t m : {1024, 2048}) {
    for (std::int64_t n : {256, 512, 1024}) {
      rows.push_back(ok_row(index++, {{"M", m}, {"N", n}}, double(m * n) / 1e4, 1, 1));
    }
  }
  const auto lines = lines_of(results_report(job, rows));
  std::vector<std::string> sections;
  for (const auto& l : lines) {
    if (l.rfind("M=", 0) == 0) sections.push_back(l);
  }
  EXPECT_EQ(sections, (std::vector<std::string>{"M=1024", "M=2048"}));
  // Under each title: the column headers keyed by the last parameter, then its three rows.
  for (const auto& title : sections) {
    const auto at = std::find(lines.begin(), lines.end(), title) - lines.begin();
    ASSERT_LT(std::size_t(at + 4), lines.size());
    EXPECT_EQ(lines[at + 1].find("     N  status"), 0u) << lines[at + 1];
    EXPECT_EQ(lines[at + 2].find("   256  ok"), 0u) << lines[at + 2];
    EXPECT_EQ(lines[at + 3].find("   512  ok"), 0u) << lines[at + 3];
    EXPECT_EQ(lines[at + 4].find("  1024  ok"), 0u) << lines[at + 4];
  }
  // No point is "faster" than another of another size.
  const std::string report = results_report(job, rows);
  EXPECT_EQ(report.find("slowest"), std::string::npos) << report;
  EXPECT_EQ(report.find("x\n"), std::string::npos) << report;
}

TEST(cli_report, ThreeParametersGroupByAllButTheLast) {
  json sweep = {{"B", {1, 2}}, {"C", {8}}, {"N", {100, 200}}};
  json job = job_with(sweep, "succeeded", 4);
  const json rows = json::array({ok_row(0, {{"B", 1}, {"C", 8}, {"N", 100}}, 5, 5, 5),
                                 ok_row(1, {{"B", 1}, {"C", 8}, {"N", 200}}, 6, 6, 6),
                                 ok_row(2, {{"B", 2}, {"C", 8}, {"N", 100}}, 7, 7, 7),
                                 ok_row(3, {{"B", 2}, {"C", 8}, {"N", 200}}, 8, 8, 8)});
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("\nB=1, C=8\n    N  status"), std::string::npos) << report;
  EXPECT_NE(report.find("\nB=2, C=8\n    N  status"), std::string::npos) << report;
  EXPECT_NE(report.find("best    B=1, C=8, N=100: 5.000 µs"), std::string::npos) << report;
}

TEST(cli_report, SectionsFollowTheSpecsParameterOrderNotTheRowsKeyOrder) {
  // The spec names N first; rows carrying their params in another order do not change that.
  const json job = job_with({{"N", {1, 2}}, {"M", {3}}}, "succeeded", 2);
  const json rows = json::array(
      {ok_row(0, {{"M", 3}, {"N", 1}}, 1, 1, 1), ok_row(1, {{"M", 3}, {"N", 2}}, 2, 2, 2)});
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("\nN=1\n  M  status"), std::string::npos) << report;
  EXPECT_NE(report.find("\nN=2\n  M  status"), std::string::npos) << report;
}

TEST(cli_report, FailedPointsShowTheirErrorAndAreLeftOutOfTheComparison) {
  json job = job_with({{"N", {1, 2, 3}}}, "failed", 3);
  job["error"] = {{"type", "points_failed"},
                  {"message", "1 of 3 points failed; the first, point 1: timeout: late"}};
  const json rows =
      json::array({ok_row(0, {{"N", 1}}, 10, 10, 10),
                   failed_row(1, {{"N", 2}}, "timeout", "the point did not finish in time"),
                   ok_row(2, {{"N", 3}}, 25, 25, 25)});
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("job 7 \"f16 gemm\": failed\nerror   points_failed: 1 of 3 points failed"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("points  3 of 3 measured: 2 ok, 1 failed"), std::string::npos) << report;
  EXPECT_EQ(line_starting(report, "2  "), "2  failed  timeout: the point did not finish in time");
  // The failed point's placeholder time (1 µs) is not the best.
  EXPECT_NE(report.find("best    N=1: 10.00 µs"), std::string::npos) << report;
}

// A task's held-out points as an agent reads them (api/held_out.cpp): status, score and flags,
// no sizes and no times. They are not failed points, and each says what it shows.
json held_out_row(std::int64_t index, const std::string& status, bool correct, double score) {
  return {{"index", index},
          {"held_out", true},
          {"status", status},
          {"fitness", {{"correct", correct}, {"combined_score", score}}},
          {"flags", status == "ok" ? json::array() : json::array({"timeout"})}};
}

TEST(cli_report, HeldOutPointsCountAsTheirStatusSaysAndShowOnlyTheirScore) {
  json job = job_with({{"N", {1, 2}}}, "succeeded", 3);
  const json rows =
      json::array({ok_row(0, {{"N", 1}}, 10, 10, 10), ok_row(1, {{"N", 2}}, 25, 25, 25),
                   held_out_row(2, "ok", true, 0.823)});
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("points  3 of 3 measured: 3 ok, 0 failed, 1 held out (not shown)\n"),
            std::string::npos)
      << report;
  EXPECT_EQ(line_starting(report, "held out"),
            "held out  ok      sizes and times not shown; correct, score 0.823");
  EXPECT_NE(report.find("best    N=1: 10.00 µs"), std::string::npos) << report;

  job["status"] = "failed";
  const json failed =
      json::array({ok_row(0, {{"N", 1}}, 10, 10, 10), failed_row(1, {{"N", 2}}, "timeout", "late"),
                   held_out_row(2, "failed", false, 0)});
  const std::string with_failures = results_report(job, failed);
  EXPECT_NE(with_failures.find("points  3 of 3 measured: 1 ok, 2 failed, 1 held out (not shown)"),
            std::string::npos)
      << with_failures;
  EXPECT_EQ(line_starting(with_failures, "held out"),
            "held out  failed  sizes and times not shown, score 0; flags: timeout");
}

// Where the task keeps held-out scores private, a held-out row is its index and status alone:
// it is not called incorrect for want of a score.
TEST(cli_report, APrivateHeldOutPointSaysItsScoreIsNotShown) {
  const json job = job_with({{"N", {1, 2}}}, "succeeded", 3);
  const json rows =
      json::array({ok_row(0, {{"N", 1}}, 10, 10, 10), ok_row(1, {{"N", 2}}, 25, 25, 25),
                   json{{"index", 2}, {"held_out", true}, {"status", "ok"}}});
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("3 ok, 0 failed, 1 held out (not shown)"), std::string::npos) << report;
  EXPECT_EQ(line_starting(report, "held out"),
            "held out  ok      sizes and times not shown, nor its score (the task's held-out "
            "scores are private)");
}

TEST(cli_report, HeldOutPointsOfATwoParameterSweepHaveASectionOfTheirOwn) {
  const json job = job_with({{"M", {1024}}, {"N", {256, 512}}}, "succeeded", 3);
  const json rows = json::array({ok_row(0, {{"M", 1024}, {"N", 256}}, 10, 10, 10),
                                 ok_row(1, {{"M", 1024}, {"N", 512}}, 20, 20, 20),
                                 held_out_row(2, "ok", false, 0)});
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("\nheld out\n"), std::string::npos) << report;
  EXPECT_EQ(report.find("M=-"), std::string::npos) << report;
  EXPECT_NE(report.find("sizes and times not shown; incorrect, score 0"), std::string::npos)
      << report;
}

TEST(cli_report, APointWhoseFlagsVoidItsScoreIsNotTheBest) {
  json rows = json::array({ok_row(0, {{"N", 1}}, 10, 10, 10), ok_row(1, {{"N", 2}}, 25, 25, 25)});
  rows[0]["flags"] = {"verification_failed"};
  const json job = job_with({{"N", {1, 2}}}, "succeeded", 2);
  EXPECT_NE(results_report(job, rows).find("best    N=2: 25.00 µs"), std::string::npos)
      << results_report(job, rows);
  // Its row says why: the table alone must not pass off a wrong answer as a plain "ok".
  EXPECT_NE(line_starting(results_report(job, rows), "1  ok").find("  void: verification_failed"),
            std::string::npos)
      << results_report(job, rows);
  EXPECT_EQ(line_starting(results_report(job, rows), "2  ok").find("void"), std::string::npos)
      << results_report(job, rows);
  rows[1]["flags"] = {"timed_output_mismatch"};
  EXPECT_NE(results_report(job, rows).find(
                "best    none: every measured point has a flag that voids its score\n"),
            std::string::npos)
      << results_report(job, rows);
}

TEST(cli_report, SpeedupsOverTheFitnessBaselineKeepThreeSignificantDigits) {
  const json job = job_with({{"N", {1, 2, 3}}}, "succeeded", 3);
  json rows = json::array({ok_row(0, {{"N", 1}}, 1, 1, 1), ok_row(1, {{"N", 2}}, 8, 8, 8),
                           ok_row(2, {{"N", 3}}, 123.4, 123.4, 123.4)});
  rows[0]["fitness"] = {{"speedup", 123.4}};
  rows[1]["fitness"] = {{"speedup", 15.42}};
  rows[2]["fitness"] = {{"speedup", 1.0}};
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("vs baseline"), std::string::npos) << report;
  EXPECT_NE(line_starting(report, "1  ok").find(" 123x"), std::string::npos) << report;
  EXPECT_NE(line_starting(report, "2  ok").find(" 15.4x"), std::string::npos) << report;
  EXPECT_NE(line_starting(report, "3  ok").find(" 1.00x"), std::string::npos) << report;
}

TEST(cli_report, EveryPointFailed) {
  const json job = job_with({{"N", {1}}}, "failed", 1);
  const json rows = json::array({failed_row(0, {{"N", 1}}, "device_fault", "crashed")});
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("1  failed  device_fault: crashed"), std::string::npos) << report;
  EXPECT_NE(report.find("best    none: no point succeeded\n"), std::string::npos) << report;
  EXPECT_EQ(report.find("x\n"), std::string::npos) << "no speedups: " << report;
}

TEST(cli_report, CiHalfWidthHasTwoSignificantDigitsInTheMediansUnit) {
  const json job = job_with({{"N", {1, 2}}}, "succeeded", 2);
  const json rows = json::array({ok_row(0, {{"N", 1}}, 12.142, 12.116, 12.157),
                                 ok_row(1, {{"N", 2}}, 1234.6, 1200.0, 1300.0)});
  const std::string report = results_report(job, rows);
  EXPECT_NE(line_starting(report, "1  ok").find("12.14  ±0.021"), std::string::npos) << report;
  EXPECT_NE(line_starting(report, "2  ok").find("1235     ±50"), std::string::npos) << report;
}

TEST(cli_report, SlowJobsAreShownInMilliseconds) {
  const json job = job_with({{"N", {1, 2}}}, "succeeded", 2);
  const json rows = json::array(
      {ok_row(0, {{"N", 1}}, 2500, 2490, 2510), ok_row(1, {{"N", 2}}, 250000, 249000, 251000)});
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("median ms"), std::string::npos) << report;
  EXPECT_NE(line_starting(report, "1  ok").find("2.500  ±0.010"), std::string::npos) << report;
  EXPECT_NE(line_starting(report, "2  ok").find("250.0    ±1.0"), std::string::npos) << report;
}

TEST(cli_report, AKernelWithoutFlopsHasNoTflops) {
  const json job = job_with({{"N", {1}}}, "succeeded", 1);
  const json rows = json::array({ok_row(0, {{"N", 1}}, 10, 10, 10, /*flops=*/0, 8e6)});
  const std::string row = line_starting(results_report(job, rows), "1  ok");
  EXPECT_NE(row.find("±0        -  800.0  50.0%"), std::string::npos) << row;
}

TEST(cli_report, NoResultsYet) {
  json job = job_with({{"N", {1, 2}}}, "queued", 2);
  job["device"] = nullptr;
  const std::string report = results_report(job, json::array());
  EXPECT_EQ(report,
            "job 7 \"f16 gemm\": queued\n"
            "kernel  gemm f16, m=M n=N k=4096 (row x col, library)\n"
            "device  not assigned yet\n"
            "points  0 of 2 measured: 0 ok, 0 failed\n"
            "labels  team=perf\n"
            "\n"
            "no results yet\n");
}

TEST(cli_report, ARunningJobShowsThePointsStoredSoFar) {
  json job = job_with({{"N", {1, 2, 3, 4}}}, "running", 4);
  const json rows = json::array({ok_row(0, {{"N", 1}}, 1, 1, 1), ok_row(2, {{"N", 3}}, 3, 3, 3)});
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("points  2 of 4 measured: 2 ok, 0 failed"), std::string::npos) << report;
  EXPECT_NE(line_starting(report, "3  ok").find("3.000"), std::string::npos) << report;
}

TEST(cli_report, NamesWithControlCharactersStayOnOneLine) {
  json job = job_with({{"N", {1}}}, "succeeded", 1);
  job["name"] = "two\nlines";
  const std::string report = results_report(job, json::array());
  EXPECT_EQ(lines_of(report).front(), "job 7 \"two lines\": succeeded");
}

TEST(cli_text_table, AlignsByCodePointsNotBytes) {
  using detail::text_table;
  text_table t({{"name", text_table::align::left}, {"µs", text_table::align::right}});
  t.add_row({"a", "±1"});
  t.add_row({"bbb", "10"}, "a note past the columns");
  EXPECT_EQ(t.render(),
            "name  µs\n"
            "a     ±1\n"
            "bbb   10  a note past the columns\n");
}

// An imported job, its rows made by the real codec as the daemon makes them.
std::pair<json, json> imported_job(const json& request) {
  const import_request req = parse_import(request, {});
  json rows = json::array();
  for (std::size_t i = 0; i < req.kernels.size(); ++i) {
    rows.push_back(
        to_json(imported_point(req.kernels[i], i, {{std::string(point_parameter(req.format)), i}},
                               req.target, to_string(req.format))));
  }
  const json job = {{"id", 9},
                    {"name", req.name},
                    {"labels", json::object()},
                    {"status", "succeeded"},
                    {"op", "import"},
                    {"engine", "import"},
                    {"device", nullptr},
                    {"progress", {{"done", rows.size()}, {"total", rows.size()}}},
                    {"spec", import_spec_json(req)}};
  return {job, rows};
}

TEST(cli_report, AnImportShowsKernelNamesAndLeavesOutWhatTheSourceDidNotGive) {
  const auto [job, rows] =
      imported_job({{"format", "nsys_cuda_gpu_kern_sum"},
                    {"name", "sgemm"},
                    {"device", "H100-SXM"},
                    {"work", {{"ampere_sgemm_128x64_nn", {{"flops", 2.0e9}, {"bytes", 2.4e7}}}}},
                    {"data", testing::k_nsys}});
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("job 9 \"sgemm\": succeeded\n"), std::string::npos) << report;
  EXPECT_NE(report.find("kernel  import nsys_cuda_gpu_kern_sum, 2 kernels, roof dtype f32\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("device  NVIDIA H100 SXM\n"), std::string::npos) << report;
  EXPECT_NE(report.find("points  2 of 2 imported: 2 ok, 0 failed\n"), std::string::npos) << report;
  // A summary has no confidence interval: "-", and the name runs on after the columns.
  // A summary has no confidence interval: "-". The last column is the kernel's share of the
  // GPU time, and its name runs on after the columns.
  EXPECT_NE(report.find("kernel  status  median µs  95% CI  TFLOP/s   GB/s   roof  bound     time\n"
                        "     0  ok          45.50       -    43.96  527.5  65.7%  compute  91.2%"
                        "  ampere_sgemm_128x64_nn\n"
                        "     1  ok          4.400       -        -      -      -  -         8.8%"
                        "  void reduce<float, 256>(float*, int)\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("best    kernel=1 (void reduce<float, 256>(float*, int)): 4.400 µs\n"),
            std::string::npos)
      << report;
  EXPECT_EQ(report.find("the slowest point"), std::string::npos) << report;
}

TEST(cli_report, AnImportedTraceHasItsConfidenceIntervalFromSixCalls) {
  const auto [job, rows] =
      imported_job({{"format", "rocprofv3_kernel_trace"}, {"data", testing::k_longer_trace()}});
  const std::string report = results_report(job, rows);
  EXPECT_NE(report.find("device  not named by the import"), std::string::npos) << report;
  EXPECT_NE(report.find("     0  ok          13.00    ±1.0"), std::string::npos) << report;
  // Three calls are too few for a 95% interval: "-", not "±1.0".
  const auto [short_job, short_rows] =
      imported_job({{"format", "rocprofv3_kernel_trace"}, {"data", testing::k_trace}});
  const std::string short_report = results_report(short_job, short_rows);
  EXPECT_NE(short_report.find("     0  ok          13.00       -"), std::string::npos)
      << short_report;
}

TEST(cli_text_table, SignificantDigits) {
  using detail::format_significant;
  EXPECT_EQ(format_significant(1234.6, 4), "1235");
  EXPECT_EQ(format_significant(1234.4, 4), "1234");
  EXPECT_EQ(format_significant(12345, 4), "12345");
  EXPECT_EQ(format_significant(12.142, 4), "12.14");
  EXPECT_EQ(format_significant(0.012345, 4), "0.01235");
  EXPECT_EQ(format_significant(9.9996, 4), "10.00");
  EXPECT_EQ(format_significant(99.96, 4), "99.96");
  EXPECT_EQ(format_significant(0.0205, 2), "0.021");
  EXPECT_EQ(format_significant(0, 4), "0");
  EXPECT_EQ(format_significant(-2.5, 2), "-2.5");
  EXPECT_EQ(format_significant(0.00012345, 4), "1.234e-04");
}

TEST(cli_text_table, OneLineCutsLongTextWithAnEllipsis) {
  EXPECT_EQ(detail::one_line("a\tb\nc"), "a b c");
  EXPECT_EQ(detail::one_line("abcdef", 4), "abc…");
  EXPECT_EQ(detail::one_line("abcd", 4), "abcd");
  EXPECT_EQ(detail::one_line("µµµµµ", 3), "µµ…");
}

// A row of a job with variants: the comparison the runner adds.
json variant_row(std::int64_t index, std::int64_t n, const std::string& variant, double median,
                 double over_slowest, const std::string& slowest, double over_baseline,
                 const std::string& baseline) {
  json r = ok_row(index, {{"N", n}}, median, median * 0.99, median * 1.01);
  r["variant"] = variant;
  r["comparison"] = {{"over_slowest",
                      {{"variant", slowest},
                       {"speedup", over_slowest},
                       {"ci95", {over_slowest * 0.98, over_slowest * 1.02}}}},
                     {"over_baseline",
                      {{"variant", baseline},
                       {"speedup", over_baseline},
                       {"ci95", {over_baseline * 0.98, over_baseline * 1.02}}}}};
  return r;
}

json variants_job() {
  json job = job_with({{"N", {64, 128}}}, "succeeded", 6);
  job["spec"]["variants"] = json::array({{{"name", "naive"}, {"op", "custom"}},
                                         {{"name", "tiled"}, {"op", "custom"}},
                                         {{"name", "library"}, {"op", "gemm"}}});
  job["spec"]["baseline"] = "naive";
  return job;
}

TEST(cli_report, VariantsGetATablePerPointSortedByTime) {
  const json rows = json::array({variant_row(0, 64, "naive", 40, 1, "naive", 1, "naive"),
                                 variant_row(0, 64, "tiled", 10, 4, "naive", 4, "naive"),
                                 variant_row(0, 64, "library", 20, 2, "naive", 2, "naive"),
                                 variant_row(1, 128, "naive", 320, 1, "naive", 1, "naive"),
                                 variant_row(1, 128, "tiled", 40, 8, "naive", 8, "naive"),
                                 failed_row(1, {{"N", 128}}, "compile_error", "no such entry")});
  json rows_with_variant = rows;
  rows_with_variant[5]["variant"] = "library";
  const std::string report = results_report(variants_job(), rows_with_variant);
  EXPECT_NE(report.find("kernel  3 variants: naive, tiled, library; baseline naive"),
            std::string::npos)
      << report;
  const auto lines = lines_of(report);
  const auto at = std::find(lines.begin(), lines.end(), "N=64") - lines.begin();
  ASSERT_LT(std::size_t(at + 4), lines.size()) << report;
  EXPECT_EQ(lines[at + 1].find("  variant  status  median µs"), 0u) << report;
  EXPECT_NE(lines[at + 1].find("vs slowest  vs naive   speedup CI"), std::string::npos) << report;
  // Fastest first.
  EXPECT_EQ(lines[at + 2].find("  tiled"), 0u) << report;
  EXPECT_EQ(lines[at + 3].find("  library"), 0u) << report;
  EXPECT_EQ(lines[at + 4].find("  naive"), 0u) << report;
  EXPECT_NE(lines[at + 2].find("4.00x     4.00x   3.92..4.08"), std::string::npos) << lines[at + 2];
  // A variant that failed shows its error, after those that measured.
  EXPECT_NE(line_starting(report, "library  failed").find("compile_error: no such entry"),
            std::string::npos)
      << report;
  // The best of each point, then overall by the geometric mean over the baseline.
  EXPECT_NE(report.find("best    N=64: tiled, 10.00 µs, 4.00x naive\n"
                        "        N=128: tiled, 40.00 µs, 8.00x naive\n"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("overall tiled: 5.66x naive (geometric mean over 2 points), fastest at 2 "
                        "of 2 points"),
            std::string::npos)
      << report;
}

// A user kernel's registers and occupancy are columns where the rows carry them (the GPU
// engine), per variant; a row without them (a library GEMM) shows a dash.
TEST(cli_report, RegistersAndOccupancyAreColumnsWhereTheRowsHaveThem) {
  json rows = json::array({variant_row(0, 64, "naive", 40, 1, "naive", 1, "naive"),
                           variant_row(0, 64, "tiled", 10, 4, "naive", 4, "naive"),
                           variant_row(0, 64, "library", 20, 2, "naive", 2, "naive")});
  EXPECT_EQ(results_report(variants_job(), rows).find("occupancy"), std::string::npos);
  rows[0]["resources"] = {{"registers", 32}, {"occupancy", 1.0}};
  rows[1]["resources"] = {{"registers", 128}, {"occupancy", 0.25}, {"limited_by", {"registers"}}};
  const std::string report = results_report(variants_job(), rows);
  EXPECT_NE(line_starting(report, "variant").find("speedup CI  regs  occupancy"), std::string::npos)
      << report;
  EXPECT_NE(line_starting(report, "tiled").find("128      25.0%"), std::string::npos) << report;
  EXPECT_NE(line_starting(report, "naive").find("32     100.0%"), std::string::npos) << report;
  EXPECT_NE(line_starting(report, "library").find("-          -"), std::string::npos) << report;

  // A plain sweep, too.
  const json job = job_with({{"N", {1024}}}, "succeeded", 1);
  json plain = json::array({ok_row(0, {{"N", 1024}}, 10, 9.99, 10.01)});
  plain[0]["resources"] = {{"registers", 40}, {"occupancy", 0.75}};
  const std::string one = results_report(job, plain);
  EXPECT_NE(line_starting(one, "N ").find("bound    regs  occupancy"), std::string::npos) << one;
  EXPECT_NE(line_starting(one, "1024").find("40      75.0%"), std::string::npos) << one;
}

// A variant whose flags void its score says which, whatever the flag: a wrong answer under
// timing is as wrong as one in the check before it.
TEST(cli_report, AVariantWhoseFlagsVoidItsScoreIsMarked) {
  json rows = json::array({variant_row(0, 64, "naive", 40, 1, "naive", 1, "naive"),
                           variant_row(0, 64, "tiled", 10, 4, "naive", 4, "naive")});
  rows[1]["flags"] = {"timed_output_mismatch", "excessive_speedup"};
  const std::string report = results_report(variants_job(), rows);
  EXPECT_NE(line_starting(report, "tiled ").find("  void: timed_output_mismatch"),
            std::string::npos)
      << report;
  EXPECT_EQ(line_starting(report, "naive ").find("void"), std::string::npos) << report;
  // The fastest variant, wrong, is not the best of its point nor overall; the sound one is.
  EXPECT_NE(report.find("best    N=64: naive, 40.00 µs"), std::string::npos) << report;
  EXPECT_NE(report.find("overall naive: "), std::string::npos) << report;

  rows[0]["flags"] = {"verification_failed"};
  const std::string none = results_report(variants_job(), rows);
  EXPECT_NE(none.find("best    N=64: none: every variant that measured has a flag that voids"),
            std::string::npos)
      << none;
  EXPECT_NE(none.find("overall none: every variant has a point whose flags void its score"),
            std::string::npos)
      << none;
}

TEST(cli_report, VariantsWithoutABaselineCompareWithTheSlowest) {
  json job = variants_job();
  job["spec"].erase("baseline");
  json a = variant_row(0, 64, "naive", 40, 1, "naive", 1, "naive");
  json b = variant_row(0, 64, "tiled", 10, 4, "naive", 4, "naive");
  a["comparison"]["over_baseline"] = nullptr;
  b["comparison"]["over_baseline"] = nullptr;
  const std::string report = results_report(job, json::array({a, b}));
  EXPECT_EQ(report.find("vs naive"), std::string::npos) << report;
  EXPECT_NE(report.find("best    N=64: tiled, 10.00 µs, 4.00x naive"), std::string::npos) << report;
  EXPECT_NE(report.find("overall tiled: 4.00x the slowest"), std::string::npos) << report;
}

// The score line: the combined score and what made it; why a withheld one is not given; that a
// task keeping its held-out scores private shows the public points' score; none without a
// fitness summary.
TEST(cli_report, TheScoreSaysWhatMadeItOrWhyItIsWithheld) {
  json job = {{"id", 7},
              {"spec", {{"fitness", {{"target_us", 50}}}}},
              {"summary",
               {{"fitness",
                 {{"correct", true},
                  {"points", 3},
                  {"correct_points", 3},
                  {"speedup", 1.2345},
                  {"latency_score", 0.5},
                  {"combined_score", 0.61234},
                  {"withheld", false},
                  {"flags", json::array()}}}}}};
  EXPECT_EQ(score_text(job),
            "0.612 (correct at 3 of 3 points; speedup 1.23x; latency score 0.500)");
  job["summary"]["fitness"]["withheld"] = true;
  job["summary"]["fitness"]["flags"] = {"excessive_speedup"};
  EXPECT_EQ(score_text(job),
            "withheld: a speedup over 10x the baseline awaits an operator's confirmation "
            "(kernelscan confirm 7) (correct at 3 of 3 points; speedup 1.23x; latency score "
            "0.500; flags excessive_speedup)");
  job["summary"]["fitness"]["withheld"] = false;
  job["summary"]["fitness"]["held_out"] = "private";
  job["summary"]["fitness"]["flags"] = json::array();
  EXPECT_NE(score_text(job).find("; over the public points: the task keeps its held-out scores "
                                 "private)"),
            std::string::npos);
  EXPECT_EQ(score_text(json{{"id", 8}, {"summary", {{"fitness", nullptr}}}}), "");
  // A job that did not ask to be scored: its summary's score means nothing.
  json unasked = job;
  unasked["spec"] = {{"fitness", {{"baseline", nullptr}}}};
  EXPECT_EQ(score_text(unasked), "");
  unasked["task"] = "axpy";  // a task's candidate is always scored
  EXPECT_NE(score_text(unasked), "");
  EXPECT_EQ(score_text(json{{"id", 9}}), "");
  // In the report, beneath the points.
  const std::string report = results_report(job, json::array({ok_row(0, {{"N", 1}}, 10, 9, 11)}));
  EXPECT_NE(report.find("\nscore   0.612 (correct at 3 of 3 points; "), std::string::npos)
      << report;
}

}  // namespace
}  // namespace kernelscan

// Hostile user kernels on the OpenCL engine (PoCL on a CPU). Kernels that make the compiler run
// for minutes or take gigabytes: the compile is stopped at its limit, its job fails with a
// compile_error that says which limit, the worker is replaced, and the next job runs. A kernel
// that prints bytes that are not UTF-8: the log stays valid UTF-8 (and JSON).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "tests/support/daemon_process.hpp"

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;

// A macro that doubles its text `levels` times: 2^20 statements took PoCL 50 s and 2.2 GiB.
std::string doubling_source(int levels) {
  std::string s = "#define M0(x) x x\n";
  for (int i = 1; i < levels; ++i) {
    s += "#define M" + std::to_string(i) + "(x) M" + std::to_string(i - 1) + "(x) M" +
         std::to_string(i - 1) + "(x)\n";
  }
  return s + "__kernel void k(__global float* o) { M" + std::to_string(levels - 1) +
         "(o[0] += 1.0f;) }\n";
}

// A loop of a million iterations unrolled: 3 GiB within seconds, then minutes more.
const std::string k_unrolled =
    "__kernel void k(__global float* o) {\n  float s = 0;\n#pragma unroll 1000000\n"
    "  for (int i = 0; i < 1000000; ++i) s += o[i & 1023] * i;\n  o[0] = s;\n}\n";

json custom_job(const std::string& source) {
  // An option of its own, so that no driver's cache of compiled programs answers the compile.
  static const std::string run =
      std::to_string(getpid()) + "_" +
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  static int jobs = 0;
  return {{"engine", "opencl"},
          {"cache", false},
          {"kernel",
           {{"op", "custom"},
            {"language", "opencl"},
            {"source", source},
            {"entry", "k"},
            {"compile_options", {"-DKS_RUN_" + run + "_" + std::to_string(++jobs)}},
            {"block", {64, 1, 1}},
            {"grid", {"N/64", 1, 1}},
            {"args", {{{"name", "o"}, {"type", "f32*"}, {"count", "N"}, {"output", true}}}}}},
          {"sweep", {{"N", {1024, 2048, 4096}}}},
          {"timing", {{"l2", "hot"}, {"max_time_ms", 100}}}};
}

const std::string k_honest = "__kernel void k(__global float* o) { o[get_global_id(0)] = 2.0f; }";

// Runs `source` on a daemon with `limits`, expects its job to fail with a compile_error whose
// message has `says`, then an honest job to succeed on a fresh worker, then a clean SIGTERM.
void expect_stopped(const std::string& source, std::vector<std::string> limits,
                    const std::string& says) {
  if (std::find(limits.begin(), limits.end(), "--point-timeout") == limits.end())
    limits.insert(limits.end(), {"--point-timeout", "60"});
  daemon_process daemon({.mock_devices = 1, .engine = "opencl", .extra_args = limits});
  daemon.start();
  const pid_t before = daemon.worker_pids().at(0);
  const auto started = std::chrono::steady_clock::now();
  const auto bomb = daemon.submit(custom_job(source));
  const auto honest = daemon.submit(custom_job(k_honest));
  const json job = daemon.wait_job(bomb, 60s);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
  EXPECT_EQ(job["status"], "failed") << job.dump();
  EXPECT_EQ(job["error"]["type"], "compile_error") << job.dump();
  EXPECT_NE(job["error"]["message"].get<std::string>().find(says), std::string::npos) << job.dump();
  const json next = daemon.wait_job(honest, 60s);
  EXPECT_EQ(next["status"], "succeeded") << next.dump();
  EXPECT_NE(daemon.worker_pids().at(0), before) << "the worker that compiled was replaced";
  EXPECT_EQ(daemon.get("/readyz").status, 200);
  EXPECT_EQ(daemon.terminate(), 0) << daemon.log();
}

// The limits leave the honest kernel's compile (a few tenths of a second, more on a machine
// busy with other work) room to spare; the bombs take tens of seconds.
TEST(CompileLimits, ACompilePastItsTimeIsStoppedAndTheNextJobRuns) {
  expect_stopped(doubling_source(20), {"--compile-timeout", "5", "--compile-memory", "0"},
                 "the compiler ran for more than 5 s (the limit on one compile) and was stopped");
}

TEST(CompileLimits, ACompilePastItsMemoryIsStoppedAndTheNextJobRuns) {
  expect_stopped(k_unrolled, {"--compile-timeout", "0", "--compile-memory", "200000000"},
                 "the compiler took more than 190 MiB of memory (the limit on one compile)");
}

// Ended by the point's watchdog, a compile would be a `timeout` that names no compile, at every
// point of the job in turn: it is stopped a little before, and the job ends at once.
TEST(CompileLimits, ACompileOutlivingItsPointsWatchdogIsStoppedFirst) {
  expect_stopped(doubling_source(20), {"--point-timeout", "5"},
                 "the point's watchdog budget of 5.2 s, and was stopped");
}

// Where a sweep parameter reaches the compiler (-DB=B), a compile stopped at its limit fails only
// its point: B=1 is a bomb, B=0 and B=2 compile at once and are measured, each on a worker of its
// own after the bomb's.
TEST(CompileLimits, WhereASweepParameterReachesTheCompilerOnlyThatPointFails) {
  daemon_process daemon(
      {.mock_devices = 1,
       .engine = "opencl",
       .extra_args = {"--compile-timeout", "5", "--compile-memory", "0", "--point-timeout", "60"}});
  daemon.start();
  json spec =
      custom_job("#if B == 1\n" + doubling_source(20) + "#else\n" + k_honest + "\n#endif\n");
  spec["kernel"]["compile_options"].push_back("-DB=B");
  spec["sweep"] = {{"B", {0, 1, 2}}};
  spec["kernel"]["args"][0]["count"] = 1024;
  spec["kernel"]["grid"] = {16, 1, 1};
  const json job = daemon.wait_job(daemon.submit(spec), 90s);
  EXPECT_EQ(job["status"], "failed") << job.dump();
  EXPECT_EQ(job["error"]["type"], "points_failed") << job.dump();
  const json rows =
      daemon.get("/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>()) + "/results")
          .body["results"];
  ASSERT_EQ(rows.size(), 3u) << rows.dump();
  std::map<int, json> by_b;
  for (const auto& r : rows)
    by_b[r["params"]["B"].get<int>()] = r;
  EXPECT_EQ(by_b[0]["status"], "ok") << by_b[0].dump();
  EXPECT_EQ(by_b[2]["status"], "ok") << by_b[2].dump();
  EXPECT_EQ(by_b[1]["error"]["type"], "compile_error") << by_b[1].dump();
  EXPECT_NE(by_b[1]["error"]["message"].get<std::string>().find(
                "the compiler ran for more than 5 s (the limit on one compile) and was stopped"),
            std::string::npos)
      << by_b[1].dump();
  EXPECT_EQ(daemon.get("/readyz").status, 200);
}

// Where every point's compile is stopped at its limit, three in a row stop the job.
TEST(CompileLimits, ThreeCompilesInARowStoppedAtTheirLimitStopTheJob) {
  daemon_process daemon(
      {.mock_devices = 1,
       .engine = "opencl",
       .extra_args = {"--compile-timeout", "3", "--compile-memory", "0", "--point-timeout", "60"}});
  daemon.start();
  json spec = custom_job(doubling_source(20) + "#define UNUSED_B B\n");
  spec["kernel"]["compile_options"].push_back("-DB=B");
  spec["sweep"] = {{"B", {1, 2, 3, 4, 5}}};
  spec["kernel"]["args"][0]["count"] = 1024;
  spec["kernel"]["grid"] = {16, 1, 1};
  const json job = daemon.wait_job(daemon.submit(spec), 90s);
  EXPECT_EQ(job["status"], "failed") << job.dump();
  EXPECT_EQ(job["error"]["message"].get<std::string>().rfind(
                "stopped after 3 points in a row timed out, crashed their worker or had their "
                "compile stopped at its limit; 2 of 5 points were not measured; the first "
                "failure, point 0: compile_error: the compiler ran for more than 3 s",
                0),
            0u)
      << job.dump();
  EXPECT_EQ(job["progress"]["done"], 3) << job.dump();
}

TEST(KernelOutput, BytesThatAreNotUtf8AreEscapedAndTheLogStaysJson) {
  daemon_process daemon(
      {.mock_devices = 1, .engine = "opencl", .extra_args = {"--log-format", "json"}});
  daemon.start();
  json spec = custom_job(
      "__kernel void k(__global float* o) {\n"
      "  if (get_global_id(0) == 0) printf(\"marker caf\\xc3\\xa9 \\xff\\xfe \\xe2\\x82\\n\");\n"
      "  o[get_global_id(0)] = 2.0f;\n}\n");
  spec["sweep"] = {{"N", {1024}}};
  const json job = daemon.wait_job(daemon.submit(spec), 60s);
  EXPECT_EQ(job["status"], "succeeded") << job.dump();
  std::string printed;
  ASSERT_TRUE(eventually([&] {
    const std::string log = daemon.log();
    const auto at = log.find("marker");
    if (at == std::string::npos) return false;
    printed = log.substr(at, log.find('\n', at) - at);
    return true;
  })) << daemon.log();
  EXPECT_EQ(printed.rfind("marker caf\xc3\xa9 \\\\xff\\\\xfe \\\\xe2\\\\x82\"", 0), 0u) << printed;
  const std::string log = daemon.log();
  std::size_t start = 0;
  for (auto nl = log.find('\n'); nl != std::string::npos; nl = log.find('\n', start)) {
    const std::string line = log.substr(start, nl - start);
    start = nl + 1;
    EXPECT_TRUE(json::accept(line)) << line;
  }
}

}  // namespace
}  // namespace kernelscan::testing

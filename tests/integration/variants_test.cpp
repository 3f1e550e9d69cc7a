// Several kernels in one job through a real daemon: three variants measured side by side at
// every point, on the mock engine and on the OpenCL engine (PoCL: a naive and a tiled matmul in
// OpenCL C and the library GEMM), on SQLite and (as every integration test) PostgreSQL.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "tests/support/daemon_process.hpp"
#include "tests/support/required_device.hpp"

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;

json rows_of(const daemon_process& d, std::int64_t id) {
  return d.get("/api/v1/jobs/" + std::to_string(id) + "/results").body["results"];
}

// A GEMM in three variants the mock's model tells apart.
json mock_variants_job(double delay_ms = 0) {
  json j = parse_json(R"js({
    "kernel": {"op": "gemm", "m": "N", "n": "N", "k": "N", "dtype": "f16"},
    "variants": [{"name": "library"},
                 {"name": "builtin", "impl": "builtin"},
                 {"name": "f32", "dtype": "f32"}],
    "baseline": "builtin",
    "sweep": {"N": [1024, 2048, 4096]}
  })js");
  j["mock"] = {{"delay_ms", delay_ms}};
  return j;
}

void expect_comparison(const json& row, const std::string& baseline) {
  SCOPED_TRACE(row.dump());
  ASSERT_TRUE(row["comparison"].is_object());
  const auto& slow = row["comparison"]["over_slowest"];
  ASSERT_TRUE(slow.is_object());
  EXPECT_LE(slow["ci95"][0].get<double>(), slow["speedup"].get<double>());
  EXPECT_GE(slow["ci95"][1].get<double>(), slow["speedup"].get<double>());
  EXPECT_GE(slow["speedup"].get<double>(), 0.99);  // nothing is slower than the slowest
  const auto& base = row["comparison"]["over_baseline"];
  ASSERT_TRUE(base.is_object());
  EXPECT_EQ(base["variant"], baseline);
  EXPECT_LE(base["ci95"][0].get<double>(), base["speedup"].get<double>());
  EXPECT_GE(base["ci95"][1].get<double>(), base["speedup"].get<double>());
  // The fitness of a variant is over the baseline variant.
  EXPECT_DOUBLE_EQ(row["fitness"]["speedup"].get<double>(), base["speedup"].get<double>());
}

TEST(VariantsApi, ThreeVariantsOnTheMockGiveARowEachAtEveryPoint) {
  daemon_process daemon;
  daemon.start();
  const auto id = daemon.submit(mock_variants_job());
  const json job = daemon.wait_job(id);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  // Progress counts variant-points.
  EXPECT_EQ(job["progress"]["total"], 9);
  EXPECT_EQ(job["progress"]["done"], 9);
  const json rows = rows_of(daemon, id);
  ASSERT_EQ(rows.size(), 9u);
  std::map<std::int64_t, std::set<std::string>> seen;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    // Rows come by point, then in the variants' order.
    EXPECT_EQ(row["index"], i / 3);
    EXPECT_EQ(row["variant"], (std::vector<std::string>{"library", "builtin", "f32"}[i % 3]));
    EXPECT_EQ(row["status"], "ok");
    seen[row["params"]["N"].get<std::int64_t>()].insert(row["variant"].get<std::string>());
    expect_comparison(row, "builtin");
  }
  for (const auto& [n, variants] : seen)
    EXPECT_EQ(variants.size(), 3u) << n;
  // The model's library GEMM beats its builtin one.
  EXPECT_GT(rows[6]["comparison"]["over_baseline"]["speedup"].get<double>(), 1.2);
  // The summary names the best variant and each one's geometric-mean speedup.
  const json& summary = job["summary"]["variants"];
  ASSERT_TRUE(summary.is_object()) << job.dump();
  EXPECT_EQ(summary["baseline"], "builtin");
  EXPECT_EQ(summary["speedup_over"], "baseline");
  EXPECT_EQ(summary["points"], 3);
  EXPECT_EQ(summary["best"], "library");
  ASSERT_EQ(summary["variants"].size(), 3u);
  EXPECT_NEAR(summary["variants"][1]["geomean_speedup"].get<double>(), 1.0, 1e-9);
  EXPECT_EQ(summary["variants"][0]["wins"], 3);
  // The job's best point is a point of the sweep (its best row's: the least time per FLOP), not
  // a row number.
  const json& best = job["summary"]["best"];
  ASSERT_TRUE(best.is_object()) << job.dump();
  const auto cost = [](const json& r) {
    return r["time_us"]["median"].get<double>() / r["metrics"]["flops"].get<double>();
  };
  const auto fastest = std::min_element(
      rows.begin(), rows.end(), [&](const json& a, const json& b) { return cost(a) < cost(b); });
  EXPECT_EQ(best["index"], (*fastest)["index"]) << job.dump();
  EXPECT_EQ(best["params"], (*fastest)["params"]);

  // CSV and JSONL carry the variant.
  const auto csv = daemon.get("/api/v1/jobs/" + std::to_string(id) + "/results?format=csv");
  EXPECT_NE(csv.text.find(",variant,speedup_over_slowest,slowest,speedup_over_baseline,"),
            std::string::npos)
      << csv.text.substr(0, 400);
  EXPECT_NE(csv.text.find(",library,"), std::string::npos);
  const auto some = daemon.get("/api/v1/jobs/" + std::to_string(id) +
                               "/results?format=json&fields=index,variant,comparison");
  ASSERT_EQ(some.body["results"].size(), 9u) << some.text;
  EXPECT_EQ(some.body["results"][4]["variant"], "builtin");
  EXPECT_TRUE(some.body["results"][4]["comparison"].is_object());
}

TEST(VariantsApi, AJobWithoutVariantsHasNoVariantInItsRows) {
  daemon_process daemon;
  daemon.start();
  json spec = mock_variants_job();
  spec.erase("variants");
  spec.erase("baseline");
  const auto id = daemon.submit(spec);
  const json job = daemon.wait_job(id);
  ASSERT_EQ(job["status"], "succeeded");
  EXPECT_EQ(job["progress"]["total"], 3);
  EXPECT_FALSE(job["summary"].contains("variants"));
  for (const auto& row : rows_of(daemon, id)) {
    EXPECT_FALSE(row.contains("variant"));
    EXPECT_FALSE(row.contains("comparison"));
  }
  const auto csv = daemon.get("/api/v1/jobs/" + std::to_string(id) + "/results?format=csv");
  EXPECT_EQ(csv.text.find("variant"), std::string::npos);
}

TEST(VariantsApi, BadVariantsAreRefusedNamingTheField) {
  daemon_process daemon;
  daemon.start();
  json spec = mock_variants_job();
  spec["variants"][1]["impl"] = "fastest";
  const auto reply = daemon.post_json("/api/v1/jobs", spec);
  EXPECT_EQ(reply.status, 422) << reply.text;
  EXPECT_NE(reply.text.find("variants[1].impl"), std::string::npos) << reply.text;
  spec = mock_variants_job();
  spec["baseline"] = "nope";
  const auto bad_baseline = daemon.post_json("/api/v1/jobs", spec);
  EXPECT_EQ(bad_baseline.status, 422);
  EXPECT_NE(bad_baseline.text.find("is not a variant (library, builtin, f32)"), std::string::npos)
      << bad_baseline.text;
}

TEST(VariantsApi, CancelInTheMiddleKeepsWholePointsMeasured) {
  daemon_process daemon;
  daemon.start();
  json spec = mock_variants_job(300);
  spec["sweep"]["N"] = json::array({256, 512, 1024, 2048, 4096, 8192});
  const auto id = daemon.submit(spec);
  ASSERT_TRUE(eventually([&] {
    return daemon.get("/api/v1/jobs/" + std::to_string(id)).body["progress"]["done"] >= 3;
  }));
  const auto c = daemon.post("/api/v1/jobs/" + std::to_string(id) + "/cancel", "");
  EXPECT_EQ(c.status, 200) << c.text;
  const json job = daemon.wait_job(id);
  EXPECT_EQ(job["status"], "cancelled") << job.dump();
  const json rows = rows_of(daemon, id);
  EXPECT_LT(rows.size(), 18u);
  EXPECT_GE(rows.size(), 3u);
  // Every point measured has all three variants: they are measured and stored together.
  EXPECT_EQ(rows.size() % 3, 0u);
  EXPECT_EQ(job["progress"]["done"], rows.size());
}

// OpenCL C matmuls: C = A·B, row-major N×N. The naive one computes one element per work-item;
// the tiled one stages 8×8 tiles of A and B in local memory.
constexpr const char* k_matmul_source = R"cl(
__kernel void matmul_naive(__global float* c, __global const float* a, __global const float* b,
                           int n) {
  const int row = get_global_id(1), col = get_global_id(0);
  if (row >= n || col >= n) return;
  float sum = 0;
  for (int k = 0; k < n; ++k) sum += a[row * n + k] * b[k * n + col];
  c[row * n + col] = sum;
}
__kernel void matmul_tiled(__global float* c, __global const float* a, __global const float* b,
                           int n) {
  __local float ta[8][8];
  __local float tb[8][8];
  const int lr = get_local_id(1), lc = get_local_id(0);
  const int row = get_global_id(1), col = get_global_id(0);
  float sum = 0;
  for (int t = 0; t < n; t += 8) {
    ta[lr][lc] = (row < n && t + lc < n) ? a[row * n + t + lc] : 0.0f;
    tb[lr][lc] = (t + lr < n && col < n) ? b[(t + lr) * n + col] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < 8; ++k) sum += ta[lr][k] * tb[k][lc];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < n && col < n) c[row * n + col] = sum;
}
)cl";

json opencl_variants_job() {
  json j = parse_json(R"js({
    "engine": "opencl",
    "kernel": {"op": "custom", "language": "opencl",
      "block": [8, 8, 1], "grid": ["ceil(N/8)", "ceil(N/8)", 1],
      "args": [{"name": "c", "type": "f32*", "count": "N*N", "output": true},
               {"name": "a", "type": "f32*", "count": "N*N"},
               {"name": "b", "type": "f32*", "count": "N*N"},
               {"name": "n", "type": "i32", "value": "N"}],
      "flops": "2*N*N*N", "bytes": "12*N*N",
      "reference": {"op": "gemm", "m": "N", "n": "N", "k": "N", "dtype": "f32",
                    "a": "a", "b": "b", "c": "c"}},
    "variants": [{"name": "naive", "entry": "matmul_naive"},
                 {"name": "tiled", "entry": "matmul_tiled"},
                 {"name": "library", "op": "gemm", "m": "N", "n": "N", "k": "N",
                  "dtype": "f32", "impl": "builtin"}],
    "baseline": "naive",
    "sweep": {"N": [64, 96]},
    "verify": {"trials": 2},
    "timing": {"l2": "hot", "min_samples": 10, "max_time_ms": 300, "target_rel_noise": 0.02}
  })js");
  j["kernel"]["source"] = k_matmul_source;
  return j;
}

daemon_process::options opencl_daemon() {
  daemon_process::options o;
  o.engine = "opencl";
  return o;
}

// Each test on a daemon of its own on the OpenCL engine; skipped without an OpenCL device
// unless KERNELSCAN_REQUIRE_OPENCL asks for one.
class VariantsOpenCL : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      daemon.start();
    } catch (const std::exception& e) {
      if (device_required("KERNELSCAN_REQUIRE_OPENCL")) throw;
      GTEST_SKIP() << "no OpenCL device: " << e.what();
    }
  }
  daemon_process daemon{opencl_daemon()};
};

TEST_F(VariantsOpenCL, ANaiveAndATiledMatmulAndTheBuiltinGemmSideBySide) {
  const auto id = daemon.submit(opencl_variants_job());
  const json job = daemon.wait_job(id, 180s);
  ASSERT_EQ(job["status"], "succeeded") << job.dump() << "\n" << daemon.log();
  const json rows = rows_of(daemon, id);
  ASSERT_EQ(rows.size(), 6u);
  for (const auto& row : rows) {
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["status"], "ok");
    EXPECT_FALSE(row["simulated"].get<bool>());
    // Each variant verified against the same reference, and its timed samples checked.
    EXPECT_EQ(row["verification"]["status"], "passed");
    EXPECT_GE(row["verification"]["timed_checks"].get<int>(), 1);
    EXPECT_EQ(row["verification"]["timed_wrong"], 0);
    EXPECT_TRUE(row["fitness"]["correct"].get<bool>());
    expect_comparison(row, "naive");
  }
  EXPECT_EQ(rows[0]["variant"], "naive");
  EXPECT_EQ(rows[1]["variant"], "tiled");
  EXPECT_EQ(rows[2]["variant"], "library");
  EXPECT_EQ(job["summary"]["variants"]["points"], 2);
  EXPECT_TRUE(job["summary"]["variants"]["best"].is_string());
}

TEST_F(VariantsOpenCL, AVariantThatDoesNotCompileFailsItsRowsOnly) {
  json spec = opencl_variants_job();
  spec["variants"][1]["entry"] = "matmul_missing";
  spec["sweep"]["N"] = json::array({64});
  const auto id = daemon.submit(spec);
  const json job = daemon.wait_job(id, 180s);
  EXPECT_EQ(job["status"], "failed") << job.dump();
  EXPECT_NE(job["error"]["message"].get<std::string>().find("variant tiled"), std::string::npos)
      << job.dump();
  const json rows = rows_of(daemon, id);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["status"], "ok");
  EXPECT_EQ(rows[1]["status"], "failed");
  EXPECT_EQ(rows[1]["error"]["type"], "compile_error");
  EXPECT_EQ(rows[2]["status"], "ok");
  EXPECT_TRUE(rows[2]["comparison"]["over_baseline"].is_object());
}

// A variant that does not compile at any point stores its compiler's log once: the rows of the
// points after the first name the point whose row holds it.
TEST_F(VariantsOpenCL, AVariantThatNeverCompilesStoresItsLogOnce) {
  json spec = opencl_variants_job();
  std::string broken =
      std::string(k_matmul_source) + "\n__kernel void matmul_broken(__global float* c) {\n";
  for (int i = 0; i < 40; ++i)
    broken += "  c[0] = undeclared_" + std::to_string(i) + ";\n";
  broken += "}\n";
  spec["variants"][1]["entry"] = "matmul_broken";
  spec["variants"][1]["source"] = broken;
  spec["sweep"]["N"] = json::array({64, 72, 80});
  spec["timing"]["max_time_ms"] = 50;
  const auto id = daemon.submit(spec);
  const json job = daemon.wait_job(id, 180s);
  EXPECT_EQ(job["status"], "failed") << job.dump().substr(0, 2000);
  const json rows = rows_of(daemon, id);
  ASSERT_EQ(rows.size(), 9u);
  const std::string first = rows[1]["error"]["message"];
  EXPECT_EQ(rows[1]["error"]["type"], "compile_error");
  EXPECT_NE(first.find("undeclared_39"), std::string::npos) << first.substr(0, 2000);
  for (const int row : {4, 7}) {
    EXPECT_EQ(rows[row]["variant"], "tiled");
    EXPECT_EQ(rows[row]["error"]["type"], "compile_error");
    const std::string later = rows[row]["error"]["message"];
    EXPECT_EQ(later, first.substr(0, first.find(':')) +
                         ": the same log as at point 0 (N=64), stored with that point's row")
        << later;
  }
  for (const int row : {0, 2, 3, 5, 6, 8})
    EXPECT_EQ(rows[row]["status"], "ok") << rows[row].dump().substr(0, 2000);
  // The job's error carries the whole log, from the first point.
  EXPECT_NE(job["error"]["message"].get<std::string>().find("undeclared_39"), std::string::npos);
}

}  // namespace
}  // namespace kernelscan::testing

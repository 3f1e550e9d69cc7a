// Analysis and fitness through a real daemon with the mock engine: a custom kernel
// with a baseline gets metrics, bound, advice and fitness; the anti-cheat flags zero the score;
// the result cache answers a resubmission; each device's roofline is measured, stored, reused
// after a restart and re-measured on request.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "tests/support/daemon_process.hpp"
#include "tests/support/sse_reader.hpp"

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;

json custom_with_baseline() {
  return parse_json(R"js({
    "name": "tiled matmul vs library",
    "kernel": {
      "op": "custom",
      "source": "extern \"C\" __global__ void mm(const float* a, const float* b, float* c, int n) {}",
      "entry": "mm", "block": [16, 16, 1], "grid": ["ceil(N/16)", "ceil(N/16)", 1],
      "args": [
        {"name": "a", "type": "f32*", "count": "N*N", "init": "random"},
        {"name": "b", "type": "f32*", "count": "N*N", "init": "random"},
        {"name": "c", "type": "f32*", "count": "N*N", "output": true},
        {"name": "n", "type": "i32", "value": "N"}],
      "flops": "2*N*N*N", "bytes": "12*N*N",
      "reference": {"op": "gemm", "m": "N", "n": "N", "k": "N", "dtype": "f32",
                    "a": "a", "b": "b", "c": "c"}},
    "sweep": {"N": [512, 1024, 2048]},
    "fitness": {"baseline": {"op": "gemm", "m": "N", "n": "N", "k": "N", "dtype": "f32",
                             "impl": "library"},
                "target_us": 100, "correctness_weight": 0.5},
    "mock": {"output": "correct"}
  })js");
}

json rows_of(const daemon_process& d, std::int64_t id) {
  return d.get("/api/v1/jobs/" + std::to_string(id) + "/results").body["results"];
}

bool has_flag(const json& row, const std::string& flag) {
  const auto& f = row["flags"];
  return std::find(f.begin(), f.end(), flag) != f.end();
}

TEST(AnalysisApi, ACustomKernelWithABaselineGetsMetricsAdviceAndFitness) {
  daemon_process daemon;
  daemon.start();
  const auto id = daemon.submit(custom_with_baseline());
  const json job = daemon.wait_job(id);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  const json rows = rows_of(daemon, id);
  ASSERT_EQ(rows.size(), 3u);
  double log_score_sum = 0;
  for (const auto& row : rows) {
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["metrics"]["roof_source"], "measured");
    EXPECT_GT(row["metrics"]["tflops"].get<double>(), 0);
    // The 512³ point is shorter than a launch on the mock MI300X; the larger ones are not.
    EXPECT_EQ(row["metrics"]["bound"] == "latency", row["params"]["N"] == 512);
    EXPECT_FALSE(row["advice"].empty());
    EXPECT_EQ(row["verification"]["status"], "passed");
    EXPECT_TRUE(row["flags"].empty());
    const auto& f = row["fitness"];
    EXPECT_TRUE(f["correct"].get<bool>());
    // Paired A/B ratios: a positive speedup inside its interval, no excessive_speedup.
    ASSERT_TRUE(f["speedup"].is_number());
    EXPECT_GT(f["speedup"].get<double>(), 0.05);
    EXPECT_LT(f["speedup"].get<double>(), 10);
    EXPECT_LE(f["speedup_ci95"][0].get<double>(), f["speedup"].get<double>());
    EXPECT_GE(f["speedup_ci95"][1].get<double>(), f["speedup"].get<double>());
    EXPECT_GT(f["baseline_us"].get<double>(), 0);
    const double median = row["time_us"]["median"].get<double>();
    // target_us / median, not capped at 1: faster than the target still scores more.
    EXPECT_NEAR(f["latency_score"].get<double>(), 100 / median, 1e-9);
    EXPECT_TRUE(row["simulated"].get<bool>());
    EXPECT_NEAR(f["combined_score"].get<double>(), 0.5 + 0.5 * f["latency_score"].get<double>(),
                1e-9);
    log_score_sum += std::log(f["combined_score"].get<double>());
  }
  const json& summary = job["summary"]["fitness"];
  EXPECT_TRUE(summary["correct"].get<bool>());
  EXPECT_EQ(summary["points"], 3);
  EXPECT_EQ(summary["correct_points"], 3);
  // The geometric mean of the points' scores.
  EXPECT_NEAR(summary["combined_score"].get<double>(), std::exp(log_score_sum / 3), 1e-9);
  EXPECT_TRUE(summary["flags"].empty());
  EXPECT_TRUE(summary["simulated"].get<bool>());
  // CSV carries the score columns.
  const auto csv = daemon.get("/api/v1/jobs/" + std::to_string(id) + "/results?format=csv");
  EXPECT_NE(csv.text.find(",correct,speedup,latency_score,combined_score,name,simulated,registers,"
                          "shared_bytes,local_bytes,occupancy\r\n"),
            std::string::npos);
}

TEST(AnalysisApi, CheatsAreFlaggedAndScoreZero) {
  daemon_process daemon;
  daemon.start();
  json spec = parse_json(R"js({
    "kernel": {"op": "gemm", "m": 8192, "n": 8192, "k": 8192, "dtype": "f16"},
    "mock": {"speedup": 3}})js");
  auto id = daemon.submit(spec);
  json job = daemon.wait_job(id);
  ASSERT_EQ(job["status"], "succeeded");
  json row = rows_of(daemon, id).at(0);
  EXPECT_TRUE(has_flag(row, "faster_than_roofline")) << row.dump();
  EXPECT_EQ(row["fitness"]["combined_score"], 0.0);
  EXPECT_EQ(job["summary"]["fitness"]["combined_score"], 0.0);
  EXPECT_FALSE(job["summary"]["fitness"]["correct"].get<bool>());
  EXPECT_EQ(job["summary"]["fitness"]["flags"], json::array({"faster_than_roofline"}));

  for (const auto& [output, flag] :
       {std::pair{"unwritten", "output_not_written"},
        std::pair{"half_written", "output_not_written"}, std::pair{"wrong", "verification_failed"},
        std::pair{"low_precision", "precision_mismatch"}}) {
    spec = parse_json(R"js({"kernel": {"op": "stream", "variant": "triad", "n": 1048576}})js");
    spec["mock"] = {{"output", output}};
    id = daemon.submit(spec);
    ASSERT_EQ(daemon.wait_job(id)["status"], "succeeded");
    row = rows_of(daemon, id).at(0);
    EXPECT_TRUE(has_flag(row, flag)) << output << ": " << row.dump();
    EXPECT_EQ(row["fitness"]["combined_score"], 0.0) << output;
  }

  // Over 10x the baseline is a warning, not a zero: a small copy against a huge GEMM. The
  // point's score is capped at fitness.score_cap, and the job's score is withheld until an
  // operator confirms it.
  spec = parse_json(R"js({"kernel": {"op": "stream", "variant": "copy", "n": 1048576},
      "fitness": {"baseline": {"op": "gemm", "m": 4096, "n": 4096, "k": 4096,
                               "impl": "builtin"}}, "mock": {"output": "correct"}})js");
  id = daemon.submit(spec);
  job = daemon.wait_job(id);
  ASSERT_EQ(job["status"], "succeeded");
  row = rows_of(daemon, id).at(0);
  EXPECT_TRUE(has_flag(row, "excessive_speedup")) << row.dump();
  EXPECT_GT(row["fitness"]["speedup"].get<double>(), 10);
  EXPECT_TRUE(row["fitness"]["correct"].get<bool>());
  EXPECT_EQ(row["fitness"]["combined_score"], 10.0);
  EXPECT_TRUE(job["summary"]["fitness"]["withheld"].get<bool>()) << job.dump();
  EXPECT_EQ(job["summary"]["fitness"]["combined_score"], 0.0);
  // An operator confirms it: the job is scored (its one point, capped).
  auto confirmed = daemon.post("/api/v1/jobs/" + std::to_string(id) + "/confirm", "{}");
  ASSERT_EQ(confirmed.status, 200) << confirmed.text;
  EXPECT_FALSE(confirmed.body["summary"]["fitness"]["withheld"].get<bool>()) << confirmed.text;
  EXPECT_TRUE(confirmed.body["summary"]["fitness"]["confirmed"].get<bool>());
  EXPECT_NEAR(confirmed.body["summary"]["fitness"]["combined_score"].get<double>(), 10, 1e-9);
  EXPECT_NEAR(daemon.wait_job(id)["summary"]["fitness"]["combined_score"].get<double>(), 10, 1e-9);
  // Again: nothing changes.
  EXPECT_EQ(daemon.post("/api/v1/jobs/" + std::to_string(id) + "/confirm", "{}").status, 200);
  // A job whose score was not withheld has nothing to confirm.
  const auto nothing = daemon.post("/api/v1/jobs/1/confirm", "{}");
  EXPECT_EQ(nothing.status, 409) << nothing.text;
  EXPECT_EQ(nothing.body["error"]["type"], "nothing_to_confirm") << nothing.text;
  EXPECT_NE(nothing.text.find("nothing to confirm"), std::string::npos) << nothing.text;

  // The mock runs no device code: a kernel that does not even compile gets a modelled time like
  // any other, but with nothing verified it is not correct and scores 0, and says simulated.
  spec = parse_json(R"js({"kernel": {"op": "custom", "source": "this is not C++",
      "entry": "matmul", "block": [16, 16], "grid": ["cdiv(N,16)", "cdiv(N,16)"],
      "args": [{"name": "a", "type": "f32*", "count": "N*N", "init": "random"},
               {"name": "c", "type": "f32*", "count": "N*N", "output": true}],
      "flops": "2*N*N*N",
      "reference": {"op": "gemm", "m": "N", "n": "N", "k": "N", "a": "a", "b": "a", "c": "c"}},
      "sweep": {"N": [256, 512]}, "fitness": {"target_us": 50}})js");
  id = daemon.submit(spec);
  const json unverified = daemon.wait_job(id);
  ASSERT_EQ(unverified["status"], "succeeded");
  for (const auto& r : rows_of(daemon, id)) {
    EXPECT_TRUE(r["simulated"].get<bool>()) << r.dump();
    EXPECT_EQ(r["verification"]["status"], "skipped") << r.dump();
    EXPECT_FALSE(r["fitness"]["correct"].get<bool>()) << r.dump();
    EXPECT_EQ(r["fitness"]["combined_score"], 0.0) << r.dump();
  }
  EXPECT_EQ(unverified["summary"]["fitness"]["combined_score"], 0.0);
  EXPECT_FALSE(unverified["summary"]["fitness"]["correct"].get<bool>());
  EXPECT_TRUE(unverified["summary"]["fitness"]["simulated"].get<bool>());
}

TEST(AnalysisApi, AResubmissionIsAnsweredFromTheCacheUnlessAskedNotTo) {
  daemon_process daemon;
  daemon.start();
  json spec = stream_sweep(4, 0);
  spec["labels"] = {{"run", "first"}};
  const auto first = daemon.submit(spec);
  ASSERT_EQ(daemon.wait_job(first)["status"], "succeeded");
  const json measured = rows_of(daemon, first);

  spec["labels"] = {{"run", "second"}};  // labels, name and seed are not part of the key
  spec["name"] = "again";
  const auto second = daemon.submit(spec);
  const json hit = daemon.wait_job(second);
  ASSERT_EQ(hit["status"], "succeeded");
  EXPECT_EQ(hit["cached_from"], first);
  EXPECT_EQ(hit["progress"]["done"], 4);
  EXPECT_EQ(hit["summary"]["best"],
            daemon.get("/api/v1/jobs/" + std::to_string(first)).body["summary"]["best"]);
  const json cached = rows_of(daemon, second);
  ASSERT_EQ(cached.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(cached[i]["cache"], json({{"hit", true}, {"job_id", first}}));
    json same = cached[i];
    same.erase("cache");
    EXPECT_EQ(same, measured[i]);
    EXPECT_FALSE(measured[i].contains("cache"));
  }
  // A hit of a hit names the job that measured.
  const auto third = daemon.submit(spec);
  EXPECT_EQ(daemon.wait_job(third)["cached_from"], first);

  spec["cache"] = false;
  const auto fresh = daemon.submit(spec);
  const json job = daemon.wait_job(fresh);
  EXPECT_TRUE(job["cached_from"].is_null());
  EXPECT_FALSE(rows_of(daemon, fresh)[0].contains("cache"));
  // Another measurement is another key.
  spec["cache"] = true;
  spec["timing"] = {{"l2", "hot"}};
  EXPECT_TRUE(daemon.wait_job(daemon.submit(spec))["cached_from"].is_null());
}

TEST(AnalysisApi, RooflinesAreMeasuredStoredReusedAndRemeasuredOnRequest) {
  daemon_process daemon({.mock_devices = 2, .extra_args = {}});
  daemon.start();
  json devices;
  ASSERT_TRUE(eventually([&] {
    devices = daemon.get("/api/v1/devices").body["devices"];
    return devices[0]["measured"].is_object() && devices[1]["measured"].is_object();
  }));
  const json first = devices[0]["measured"];
  for (const char* key : {"f16_tflops", "f32_tflops", "bandwidth_gbps", "vector_f32_tflops"}) {
    EXPECT_GT(first[key].get<double>(), 0.7 * devices[0]["datasheet"][key].get<double>()) << key;
    EXPECT_LT(first[key].get<double>(), devices[0]["datasheet"][key].get<double>()) << key;
  }
  EXPECT_NE(first["method"].get<std::string>().find("simulated"), std::string::npos);
  // When it was measured is a timestamp, and nothing pretends to be a duration.
  EXPECT_EQ(first["measured_at"].get<std::string>().size(), 24u) << first.dump();
  EXPECT_FALSE(first.contains("measured_ms")) << first.dump();

  // A restart judges by the stored roofline rather than measuring again.
  daemon.terminate();
  daemon.start();
  ASSERT_TRUE(eventually([&] { return daemon.get("/api/v1/devices/0").body["state"] == "idle"; }));
  EXPECT_EQ(daemon.get("/api/v1/devices/0").body["measured"]["measured_at"], first["measured_at"]);

  // Asked to, it measures again.
  const auto asked = daemon.post("/api/v1/devices/0/roofline", std::string("{}"));
  EXPECT_EQ(asked.status, 202) << asked.text;
  EXPECT_EQ(asked.body["roofline_requested"], true);
  ASSERT_TRUE(eventually([&] {
    return daemon.get("/api/v1/devices/0").body["measured"]["measured_at"] != first["measured_at"];
  }));
  const auto missing = daemon.post("/api/v1/devices/7/roofline", std::string("{}"));
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body["error"]["details"][0]["field"], "index") << missing.text;
  EXPECT_NE(missing.text.find("its devices: 0, 1"), std::string::npos) << missing.text;
  EXPECT_EQ(daemon.post("/api/v1/devices/x/roofline", std::string("{}")).status, 404);
  // Jobs still run afterwards.
  EXPECT_EQ(daemon.wait_job(daemon.submit(stream_sweep(2, 0)))["status"], "succeeded");
}

// A client waits for a new roofline by its time: every measurement has one of its own, even
// when (as a mock device's do) two end within a millisecond, so no request's wait misses it.
TEST(AnalysisApi, EveryRooflineMeasurementHasATimeOfItsOwn) {
  daemon_process daemon({.mock_devices = 1, .extra_args = {}});
  daemon.start();
  json seen;
  ASSERT_TRUE(eventually([&] {
    seen = daemon.get("/api/v1/devices/0").body["measured"];
    return seen.is_object();
  }));
  std::set<std::string> times{seen["measured_at"].get<std::string>()};
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(daemon.post("/api/v1/devices/0/roofline", std::string("{}")).status, 202);
    ASSERT_TRUE(eventually([&] {
      const json device = daemon.get("/api/v1/devices/0").body;
      if (device["state"] == "measuring" || device["measured"] == seen) return false;
      seen = device["measured"];
      return true;
    })) << "request "
        << i << " was not measured: " << seen.dump();
    EXPECT_TRUE(times.insert(seen["measured_at"].get<std::string>()).second) << seen.dump();
  }
}

// A request that comes while a measurement runs is measured after it: the one running may
// have begun before what the request asks about (a driver changed, a clock set). A PoCL
// device takes seconds to measure, long enough to ask during it.
TEST(AnalysisApi, ARooflineAskedForWhileOneIsMeasuredIsMeasuredAfterIt) {
  daemon_process daemon({.mock_devices = 1, .engine = "opencl", .extra_args = {}});
  daemon.start();
  constexpr std::chrono::seconds k_wait{60};
  json device;
  ASSERT_TRUE(eventually(
      [&] {
        device = daemon.get("/api/v1/devices/0").body;
        return device["measured"].is_object() && device["state"] == "idle";
      },
      k_wait))
      << device.dump();
  const json first = device["measured"]["measured_at"];
  ASSERT_EQ(daemon.post("/api/v1/devices/0/roofline", std::string("{}")).status, 202);
  ASSERT_TRUE(eventually([&] {
    device = daemon.get("/api/v1/devices/0").body;
    return device["state"] == "measuring";
  })) << device.dump();
  ASSERT_EQ(daemon.post("/api/v1/devices/0/roofline", std::string("{}")).status, 202);
  // The running measurement ends, then the one asked for during it.
  json second;
  ASSERT_TRUE(eventually(
      [&] {
        second = daemon.get("/api/v1/devices/0").body["measured"]["measured_at"];
        return second != first;
      },
      k_wait));
  ASSERT_TRUE(eventually(
      [&] {
        device = daemon.get("/api/v1/devices/0").body;
        return device["measured"]["measured_at"] != second && device["state"] == "idle";
      },
      k_wait))
      << "the request made during a measurement was lost: " << device.dump();
  EXPECT_TRUE(device["last_error"].is_null()) << device.dump();
}

// A device whose roofline measurement takes its worker down is not measured again by itself
// (every restart would measure and fall again, and no job would run); it runs jobs against
// its datasheet, says why, and measures again when asked.
TEST(AnalysisApi, ARooflineThatCrashesItsWorkerIsNotMeasuredAgainUntilAsked) {
  daemon_process daemon({.mock_devices = 1, .allow_fault_injection = true, .extra_args = {}});
  ::setenv("KERNELSCAN_MOCK_ROOFLINE_FAULT", "crash", 1);
  daemon.start();
  ::unsetenv("KERNELSCAN_MOCK_ROOFLINE_FAULT");
  json device;
  ASSERT_TRUE(eventually([&] {
    device = daemon.get("/api/v1/devices/0").body;
    return device["worker_restarts"] == 1 && device["state"] == "idle";
  })) << device.dump();
  EXPECT_TRUE(device["measured"].is_null()) << device.dump();
  EXPECT_NE(device["last_error"].get<std::string>().find("while measuring the roofline"),
            std::string::npos)
      << device.dump();
  const json job = daemon.wait_job(daemon.submit(stream_sweep(2, 0)));
  EXPECT_EQ(job["status"], "succeeded") << job.dump();
  device = daemon.get("/api/v1/devices/0").body;
  EXPECT_EQ(device["worker_restarts"], 1) << device.dump();
  // Asked, it measures (and here falls) again.
  ASSERT_EQ(daemon.post("/api/v1/devices/0/roofline", std::string("{}")).status, 202);
  ASSERT_TRUE(eventually([&] {
    device = daemon.get("/api/v1/devices/0").body;
    return device["worker_restarts"] == 2 && device["state"] == "idle";
  })) << device.dump();
  EXPECT_EQ(daemon.wait_job(daemon.submit(stream_sweep(2, 0)))["status"], "succeeded");
  EXPECT_EQ(daemon.get("/api/v1/devices/0").body["worker_restarts"], 2);
  // The event stream said so as it happened: every event the daemon holds.
  sse_reader events(daemon.port(), {{"Last-Event-ID", "0"}});
  EXPECT_TRUE(eventually([&] {
    return events.has([](const sse_event& e) {
      return e.type == "device" && e.data["worker_restarts"] == 2 &&
             e.data["last_error"].is_string() &&
             e.data["last_error"].get<std::string>().find("while measuring the roofline") !=
                 std::string::npos;
    });
  }));
}

// Device routes take ?node=NAME: this node's name means its own devices (as no node does); a
// daemon alone on its store knows no other node, and says so.
TEST(AnalysisApi, DeviceRoutesAddressANodeByName) {
  daemon_process daemon({.mock_devices = 2, .extra_args = {"--node", "solo"}});
  daemon.start();
  const auto own = daemon.get("/api/v1/devices/1?node=solo");
  ASSERT_EQ(own.status, 200) << own.text;
  EXPECT_EQ(own.body["node"], "solo");
  EXPECT_EQ(own.body["index"], 1);
  EXPECT_EQ(daemon.get("/api/v1/devices/1").body["node"], "solo");

  auto r = daemon.get("/api/v1/devices/0?node=gpu-07");
  EXPECT_EQ(r.status, 404) << r.text;
  EXPECT_EQ(r.body["error"]["details"][0]["field"], "node") << r.text;
  EXPECT_NE(r.text.find(R"(no node \"gpu-07\" in the fleet (nodes: solo))"), std::string::npos)
      << r.text;
  r = daemon.post("/api/v1/devices/0/roofline?node=gpu-07", "{}");
  EXPECT_EQ(r.status, 404) << r.text;
  EXPECT_EQ(r.body["error"]["details"][0]["field"], "node") << r.text;
  r = daemon.get("/api/v1/devices/2?node=solo");
  EXPECT_EQ(r.status, 404) << r.text;
  EXPECT_EQ(r.body["error"]["details"][0]["field"], "index") << r.text;
  r = daemon.get("/api/v1/devices/0?nodes=solo");
  EXPECT_EQ(r.status, 400) << r.text;
  EXPECT_EQ(r.body["error"]["details"][0]["field"], "nodes") << r.text;
  r = daemon.get("/api/v1/devices/0?node=");
  EXPECT_EQ(r.status, 400) << r.text;

  const auto asked = daemon.post("/api/v1/devices/1/roofline?node=solo", "{}");
  EXPECT_EQ(asked.status, 202) << asked.text;
  EXPECT_EQ(asked.body["node"], "solo");
  EXPECT_EQ(asked.body["roofline_requested"], true);
}

}  // namespace
}  // namespace kernelscan::testing

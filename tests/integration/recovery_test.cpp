// Faults against a real daemon: the daemon killed with SIGKILL mid-sweep, a worker killed,
// crashing, aborting and hanging kernels (mock fault injection), and SIGTERM draining.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <map>
#include <thread>

#include "tests/support/daemon_process.hpp"

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;

json stream_job(int points, double delay_ms) {
  return stream_sweep(points, delay_ms);
}

// A process that is gone or a zombie (reaped by nobody yet) is not running.
bool process_running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

int done_points(const daemon_process& d, std::int64_t id) {
  const auto r = d.get("/api/v1/jobs/" + std::to_string(id));
  return r.status == 200 ? r.body["progress"]["done"].get<int>() : -1;
}

std::map<int, json> rows_by_index(const daemon_process& d, std::int64_t id) {
  std::map<int, json> out;
  const auto r = d.get("/api/v1/jobs/" + std::to_string(id) + "/results");
  for (const auto& row : r.body["results"]) {
    const int index = row["index"].get<int>();
    EXPECT_FALSE(out.count(index)) << "point " << index << " stored twice";
    out[index] = row;
  }
  return out;
}

daemon_process::options with_faults(std::vector<std::string> extra = {}) {
  return {.mock_devices = 1, .allow_fault_injection = true, .extra_args = std::move(extra)};
}

TEST(Recovery, KillNineMidSweepThenRestartResumesWithEveryPointMeasured) {
  daemon_process daemon;
  daemon.start();
  const auto earlier = daemon.submit(stream_job(5, 0));
  ASSERT_EQ(daemon.wait_job(earlier)["status"], "succeeded");
  const auto earlier_rows = daemon.get("/api/v1/jobs/" + std::to_string(earlier) + "/results");

  const auto id = daemon.submit(stream_job(20, 100));
  ASSERT_TRUE(eventually([&] { return done_points(daemon, id) >= 5; }));
  const auto workers = daemon.worker_pids();
  daemon.kill9();
  // The workers die with the daemon.
  for (pid_t w : workers) {
    EXPECT_TRUE(eventually([&] { return !process_running(w); }, 5s)) << "worker " << w;
  }

  daemon.start();
  const json job = daemon.wait_job(id);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  EXPECT_EQ(job["progress"]["done"], 20);
  EXPECT_EQ(job["progress"]["ok"], 20);
  const auto rows = rows_by_index(daemon, id);
  ASSERT_EQ(rows.size(), 20u);
  for (int i = 0; i < 20; ++i)
    EXPECT_TRUE(rows.count(i)) << "point " << i << " missing";

  // The job finished before the crash is as it was.
  const auto again = daemon.get("/api/v1/jobs/" + std::to_string(earlier) + "/results");
  EXPECT_EQ(again.text, earlier_rows.text);
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + std::to_string(earlier)).body["status"], "succeeded");
}

TEST(Recovery, RepeatedKillsLoseNoAcceptedJobAndNoMeasuredPoint) {
  daemon_process daemon;
  daemon.start();
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 3; ++i)
    ids.push_back(daemon.submit(stream_job(8, 40)));
  for (int round = 0; round < 4; ++round) {
    std::this_thread::sleep_for(150ms);
    daemon.kill9();
    daemon.start();
  }
  for (auto id : ids) {
    const json job = daemon.wait_job(id);
    ASSERT_EQ(job["status"], "succeeded") << job.dump();
    EXPECT_EQ(rows_by_index(daemon, id).size(), 8u);
  }
}

TEST(Recovery, AKilledWorkerIsReplacedAndTheJobGoesOn) {
  daemon_process daemon;
  daemon.start();
  const auto id = daemon.submit(stream_job(12, 100));
  ASSERT_TRUE(eventually([&] { return done_points(daemon, id) >= 3; }));
  const pid_t worker = daemon.worker_pids().at(0);
  ASSERT_GT(worker, 0);
  ASSERT_EQ(::kill(worker, SIGKILL), 0);

  const json job = daemon.wait_job(id);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  EXPECT_EQ(job["progress"]["ok"], 12);
  const auto device = daemon.get("/api/v1/devices/0").body;
  EXPECT_GE(device["worker_restarts"].get<int>(), 1);
  EXPECT_NE(device["worker_pid"].get<int>(), worker);
  EXPECT_EQ(device["state"], "idle");
}

TEST(Recovery, ACrashingKernelFailsItsPointWithDeviceFault) {
  daemon_process daemon(with_faults());
  daemon.start();
  for (const char* fault : {"crash", "abort"}) {
    SCOPED_TRACE(fault);
    json spec = stream_job(6, 0);
    spec["mock"]["fault"] = fault;
    spec["mock"]["fault_index"] = 2;
    const auto id = daemon.submit(spec);
    const json job = daemon.wait_job(id);
    ASSERT_EQ(job["status"], "failed") << job.dump();
    EXPECT_EQ(job["error"]["type"], "points_failed");
    EXPECT_EQ(job["error"]["message"].get<std::string>().rfind(
                  "1 of 6 points failed; the first, point 2: device_fault", 0),
              0u)
        << job.dump();
    const auto rows = rows_by_index(daemon, id);
    ASSERT_EQ(rows.size(), 6u);
    for (const auto& [index, row] : rows) {
      if (index == 2) {
        EXPECT_EQ(row["status"], "failed");
        EXPECT_EQ(row["error"]["type"], "device_fault");
        EXPECT_EQ(row["flags"], json::array({"device_fault"}));
      } else {
        EXPECT_EQ(row["status"], "ok") << index;
      }
    }
  }
  // The daemon still serves and the next job succeeds.
  EXPECT_EQ(daemon.wait_job(daemon.submit(stream_job(3, 0)))["status"], "succeeded");
}

// A kernel that hangs at every point would hold the device for the watchdog's budget at each
// point of its sweep: after three points in a row take their worker down, the job stops.
TEST(Recovery, AJobWhosePointsKeepTakingTheirWorkerDownIsStopped) {
  daemon_process daemon(with_faults({"--point-timeout", "1"}));
  daemon.start();
  for (const char* fault : {"hang", "abort"}) {
    SCOPED_TRACE(fault);
    json spec = stream_job(10, 0);
    spec["timing"] = {{"max_time_ms", 50}};
    spec["mock"]["fault"] = fault;  // every point
    const auto started = std::chrono::steady_clock::now();
    const auto id = daemon.submit(spec);
    const json job = daemon.wait_job(id, 60s);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 20s);
    ASSERT_EQ(job["status"], "failed") << job.dump();
    const std::string type = std::string(fault) == "hang" ? "timeout" : "device_fault";
    EXPECT_EQ(job["error"]["message"].get<std::string>().rfind(
                  "stopped after 3 points in a row timed out, crashed their worker or had their "
                  "compile stopped at its limit; 7 of 10 "
                  "points were not measured; the first failure, point 0: " +
                      type,
                  0),
              0u)
        << job.dump();
    const auto rows = rows_by_index(daemon, id);
    ASSERT_EQ(rows.size(), 3u);
    for (const auto& [index, row] : rows)
      EXPECT_EQ(row["error"]["type"], type) << index;
  }
  // Points that fail now and then do not stop a job: only in a row.
  json spec = stream_job(8, 0);
  spec["timing"] = {{"max_time_ms", 50}};
  spec["mock"]["fault"] = "abort";
  spec["mock"]["fault_index"] = 2;
  const json job = daemon.wait_job(daemon.submit(spec), 60s);
  EXPECT_EQ(job["progress"]["done"], 8) << job.dump();
  EXPECT_EQ(daemon.wait_job(daemon.submit(stream_job(3, 0)))["status"], "succeeded");
}

TEST(Recovery, AJobWhosePointsAllFailSaysSoInWords) {
  daemon_process daemon(with_faults());
  daemon.start();
  for (const int points : {1, 2}) {
    json spec = stream_job(points, 0);
    spec["mock"]["fault"] = "abort";  // every point
    const json job = daemon.wait_job(daemon.submit(spec));
    ASSERT_EQ(job["status"], "failed") << job.dump();
    const std::string message = job["error"]["message"];
    EXPECT_EQ(message.rfind(points == 1 ? "its only point failed; point 0: device_fault"
                                        : "all 2 points failed; the first, point 0: device_fault",
                            0),
              0u)
        << message;
  }
}

TEST(Recovery, ACrashAmongManyQueuedPointsIsBlamedOnTheRightPoint) {
  // Fast points travel in batches; the crash must still be pinned on point 37.
  daemon_process daemon(with_faults());
  daemon.start();
  json spec = stream_job(80, 0);
  spec["mock"]["fault"] = "crash";
  spec["mock"]["fault_index"] = 37;
  const auto id = daemon.submit(spec);
  const json job = daemon.wait_job(id);
  ASSERT_EQ(job["status"], "failed");
  const auto rows = rows_by_index(daemon, id);
  ASSERT_EQ(rows.size(), 80u);
  for (const auto& [index, row] : rows) {
    EXPECT_EQ(row["status"], index == 37 ? "failed" : "ok") << index;
  }
  EXPECT_EQ(job["progress"]["failed"], 1);
}

TEST(Recovery, AHangingKernelTimesOutAndTheWorkerIsReplaced) {
  daemon_process daemon(with_faults({"--point-timeout", "1"}));
  daemon.start();
  json spec = stream_job(3, 0);
  spec["timing"] = {{"max_time_ms", 50}};
  spec["mock"]["fault"] = "hang";
  spec["mock"]["fault_index"] = 1;
  const auto started = std::chrono::steady_clock::now();
  const auto id = daemon.submit(spec);
  const json job = daemon.wait_job(id, 30s);
  ASSERT_EQ(job["status"], "failed") << job.dump();
  EXPECT_LT(std::chrono::steady_clock::now() - started, 15s);
  const auto rows = rows_by_index(daemon, id);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows.at(1)["error"]["type"], "timeout");
  EXPECT_EQ(rows.at(1)["flags"], json::array({"timeout"}));
  EXPECT_EQ(rows.at(0)["status"], "ok");
  EXPECT_EQ(rows.at(2)["status"], "ok");
  EXPECT_EQ(daemon.wait_job(daemon.submit(stream_job(2, 0)))["status"], "succeeded");
}

TEST(Recovery, SigtermFinishesTheCurrentPointAndTheJobResumesAfterRestart) {
  daemon_process daemon;
  daemon.start();
  const auto id = daemon.submit(stream_job(10, 300));
  ASSERT_TRUE(eventually([&] { return done_points(daemon, id) >= 2; }));
  const auto before = std::chrono::steady_clock::now();
  EXPECT_EQ(daemon.terminate(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - before, 5s);
  EXPECT_NE(daemon.log().find("interrupted by shutdown"), std::string::npos) << daemon.log();

  daemon.start();
  const auto first = daemon.get("/api/v1/jobs/" + std::to_string(id)).body;
  EXPECT_GE(first["progress"]["done"].get<int>(), 2);  // measured points survived
  const json job = daemon.wait_job(id);
  ASSERT_EQ(job["status"], "succeeded");
  EXPECT_EQ(rows_by_index(daemon, id).size(), 10u);
}

}  // namespace
}  // namespace kernelscan::testing

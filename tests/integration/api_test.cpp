// The HTTP API against a real daemon with mock devices: submit, read back, list, long-poll,
// cancel, idempotency, bad input, routing errors, assets.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <sstream>
#include <thread>

#include "tests/support/daemon_process.hpp"
#include "tests/support/sse_reader.hpp"

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;

json gemm_sweep() {
  return json::parse(R"({
    "name": "gemm sweep",
    "labels": {"team": "perf", "candidate": "7"},
    "kernel": {"op": "gemm", "m": "M", "n": "N", "k": 4096, "dtype": "f16"},
    "sweep": {"M": [1024, 4096], "N": [1024, 2048, 8192]}
  })");
}

json slow_job(int points, double delay_ms) {
  return stream_sweep(points, delay_ms, 1024);
}

// The one error shape: {"error": {"type", "message", "details"?, ...}}, `details` (when there)
// a non-empty list of {field, message} strings and nothing else.
void expect_error_shape(const http_reply& r) {
  ASSERT_TRUE(r.body.is_object()) << r.text;
  ASSERT_TRUE(r.body.contains("error")) << r.text;
  const json& e = r.body["error"];
  ASSERT_TRUE(e.is_object()) << r.text;
  EXPECT_TRUE(e.contains("type") && e["type"].is_string()) << r.text;
  EXPECT_TRUE(e.contains("message") && e["message"].is_string()) << r.text;
  if (!e.contains("details")) return;
  ASSERT_TRUE(e["details"].is_array()) << r.text;
  EXPECT_FALSE(e["details"].empty()) << r.text;
  for (const auto& d : e["details"]) {
    ASSERT_TRUE(d.is_object()) << r.text;
    EXPECT_EQ(d.size(), 2u) << r.text;
    EXPECT_TRUE(d.contains("field") && d["field"].is_string()) << r.text;
    EXPECT_TRUE(d.contains("message") && d["message"].is_string()) << r.text;
  }
}

void expect_error(const http_reply& r, int status, const std::string& type,
                  const std::string& field = "") {
  EXPECT_EQ(r.status, status) << r.text;
  expect_error_shape(r);
  ASSERT_TRUE(r.body.is_object() && r.body.contains("error")) << r.text;
  EXPECT_EQ(r.body["error"].value("type", ""), type) << r.text;
  EXPECT_FALSE(r.body["error"].value("message", "").empty()) << r.text;
  if (!field.empty()) {
    bool found = false;
    for (const auto& d : r.body["error"].value("details", json::array())) {
      if (d.value("field", "") == field) found = true;
    }
    EXPECT_TRUE(found) << "no error for field " << field << " in " << r.text;
  }
}

class Api : public ::testing::Test {
 protected:
  void SetUp() override { daemon.start(); }
  daemon_process daemon;
};

TEST_F(Api, SubmitSweepAndReadEveryPointBack) {
  const auto created = daemon.post_json("/api/v1/jobs", gemm_sweep());
  ASSERT_EQ(created.status, 201) << created.text;
  EXPECT_EQ(created.header("Location"), "/api/v1/jobs/" + created.body["id"].dump());
  EXPECT_EQ(created.body["status"], "queued");
  EXPECT_EQ(created.body["progress"]["total"], 6);
  EXPECT_EQ(created.body["spec"]["timing"]["min_samples"], 10);  // defaults are filled in
  EXPECT_TRUE(created.body["spec"]["seed"].is_number_integer());
  const auto id = created.body["id"].get<std::int64_t>();

  const json job = daemon.wait_job(id);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  EXPECT_EQ(job["progress"]["done"], 6);
  EXPECT_EQ(job["progress"]["ok"], 6);
  EXPECT_EQ(job["device"], 0);
  EXPECT_FALSE(job["started_at"].is_null());
  EXPECT_FALSE(job["finished_at"].is_null());
  ASSERT_TRUE(job["summary"]["best"].is_object());

  const auto results = daemon.get("/api/v1/jobs/" + std::to_string(id) + "/results");
  ASSERT_EQ(results.status, 200) << results.text;
  const auto& rows = results.body["results"];
  ASSERT_EQ(rows.size(), 6u);
  const std::vector<std::pair<int, int>> expected{{1024, 1024}, {1024, 2048}, {1024, 8192},
                                                  {4096, 1024}, {4096, 2048}, {4096, 8192}};
  // The best point does its work fastest: the least time per FLOP, not the smallest problem.
  double best_cost = 1e300;
  std::size_t best = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    EXPECT_EQ(row["index"], i);
    EXPECT_EQ(row["params"]["M"], expected[i].first);
    EXPECT_EQ(row["params"]["N"], expected[i].second);
    EXPECT_EQ(row["status"], "ok");
    const auto& t = row["time_us"];
    EXPECT_GT(t["median"].get<double>(), 0);
    EXPECT_LE(t["min"].get<double>(), t["median"].get<double>());
    EXPECT_LE(t["median"].get<double>(), t["max"].get<double>());
    EXPECT_LE(t["ci95_low"].get<double>(), t["median"].get<double>());
    EXPECT_GE(t["ci95_high"].get<double>(), t["median"].get<double>());
    EXPECT_GE(row["samples"].get<int>(), 10);
    EXPECT_EQ(row["verification"]["status"], "skipped");
    EXPECT_GT(row["metrics"]["tflops"].get<double>(), 0);
    const double cost = t["median"].get<double>() / row["metrics"]["flops"].get<double>();
    if (cost < best_cost) {
      best_cost = cost;
      best = i;
    }
  }
  EXPECT_EQ(job["summary"]["best"]["index"], best);
  EXPECT_DOUBLE_EQ(job["summary"]["best"]["median_us"].get<double>(),
                   rows[best]["time_us"]["median"].get<double>());
  EXPECT_EQ(job["summary"]["best"]["params"], rows[best]["params"]);
  EXPECT_NE(best, 0u) << "on the mock, as on a GPU, the smallest GEMM is the least efficient";
  // Bigger problems take longer on the mock as on a GPU.
  EXPECT_GT(rows[5]["time_us"]["median"].get<double>(), rows[0]["time_us"]["median"].get<double>());

  const auto csv = daemon.get("/api/v1/jobs/" + std::to_string(id) + "/results?format=csv");
  ASSERT_EQ(csv.status, 200);
  EXPECT_EQ(csv.header("Content-Type").rfind("text/csv", 0), 0u);
  std::istringstream lines(csv.text);
  std::string line;
  std::vector<std::string> all;
  while (std::getline(lines, line))
    all.push_back(line);
  ASSERT_EQ(all.size(), 7u);
  EXPECT_EQ(all[0].rfind("M,N,index,status,", 0), 0u) << all[0];
  EXPECT_EQ(all[1].rfind("1024,1024,0,ok,", 0), 0u) << all[1];

  const auto jsonl = daemon.get("/api/v1/jobs/" + std::to_string(id) + "/results?format=jsonl");
  ASSERT_EQ(jsonl.status, 200);
  std::istringstream jl(jsonl.text);
  int n = 0;
  while (std::getline(jl, line)) {
    EXPECT_EQ(json::parse(line)["index"], n);
    ++n;
  }
  EXPECT_EQ(n, 6);

  const auto page = daemon.get("/api/v1/jobs/" + std::to_string(id) + "/results?offset=2&limit=3");
  ASSERT_EQ(page.status, 200);
  ASSERT_EQ(page.body["results"].size(), 3u);
  EXPECT_EQ(page.body["results"][0]["index"], 2);
  EXPECT_EQ(page.body["results"][2]["index"], 4);
}

TEST_F(Api, ResultFieldsKeepOnlyTheNamedMembers) {
  const auto id = daemon.submit(gemm_sweep());
  ASSERT_EQ(daemon.wait_job(id)["status"], "succeeded");
  const std::string results = "/api/v1/jobs/" + std::to_string(id) + "/results";
  const auto full = daemon.get(results);
  ASSERT_EQ(full.status, 200) << full.text;

  const auto some = daemon.get(results + "?fields=index,params.N,time_us.median,metrics");
  ASSERT_EQ(some.status, 200) << some.text;
  const auto& rows = some.body["results"];
  ASSERT_EQ(rows.size(), 6u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& want = full.body["results"][i];
    EXPECT_EQ(rows[i], (json{{"index", want["index"]},
                             {"params", {{"N", want["params"]["N"]}}},
                             {"time_us", {{"median", want["time_us"]["median"]}}},
                             {"metrics", want["metrics"]}}))
        << rows[i].dump();
  }

  // JSON lines, with offset and limit; the values are the stored text, digit for digit.
  const auto lines = daemon.get(results + "?format=jsonl&offset=4&limit=5&fields=time_us,index");
  ASSERT_EQ(lines.status, 200) << lines.text;
  std::istringstream in(lines.text);
  std::string line;
  std::vector<json> got;
  while (std::getline(in, line))
    got.push_back(json::parse(line));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["index"], 4);
  EXPECT_EQ(got[0]["time_us"].dump(), full.body["results"][4]["time_us"].dump());

  for (const char* bad : {"fields=", "fields=index,", "fields=colour", "fields=time_us.colour",
                          "fields=params.K", "fields=index,index", "format=csv&fields=index"}) {
    const auto r = daemon.get(results + "?" + bad);
    expect_error(r, 400, "invalid_parameter", "fields");
  }
}

TEST(ApiResults, FieldsKeepAFailedPointsErrorAndNulls) {
  daemon_process daemon({.mock_devices = 1, .allow_fault_injection = true, .extra_args = {}});
  daemon.start();
  json spec = slow_job(4, 0);
  spec["mock"] = {{"fault", "crash"}, {"fault_index", 2}};
  const auto id = daemon.submit(spec);
  ASSERT_EQ(daemon.wait_job(id)["status"], "failed");
  const auto r = daemon.get("/api/v1/jobs/" + std::to_string(id) +
                            "/results?fields=index,status,error,time_us.median");
  ASSERT_EQ(r.status, 200) << r.text;
  const auto& rows = r.body["results"];
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[2]["status"], "failed");
  EXPECT_EQ(rows[2]["error"]["type"], "device_fault") << rows[2].dump();
  EXPECT_TRUE(rows[2]["time_us"].is_null()) << rows[2].dump();
  EXPECT_FALSE(rows[1].contains("error")) << rows[1].dump();
  EXPECT_EQ(rows[1]["time_us"].size(), 1u) << rows[1].dump();
}

TEST_F(Api, ListFiltersByStatusAndLabelsAndPagesWithACursor) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    json spec = gemm_sweep();
    spec["labels"] = {{"batch", i % 2 ? "odd" : "even"}, {"n", std::to_string(i)}};
    ids.push_back(daemon.submit(spec));
  }
  for (auto id : ids)
    ASSERT_EQ(daemon.wait_job(id)["status"], "succeeded");

  const auto odd = daemon.get("/api/v1/jobs?label.batch=odd");
  ASSERT_EQ(odd.status, 200) << odd.text;
  ASSERT_EQ(odd.body["jobs"].size(), 2u);
  EXPECT_EQ(odd.body["jobs"][0]["id"], ids[3]);  // newest first
  EXPECT_EQ(odd.body["jobs"][1]["id"], ids[1]);
  EXPECT_FALSE(odd.body["jobs"][0].contains("spec"));  // lists stay small

  const auto both = daemon.get("/api/v1/jobs?label.batch=even&label.n=2");
  ASSERT_EQ(both.body["jobs"].size(), 1u);
  EXPECT_EQ(both.body["jobs"][0]["id"], ids[2]);

  EXPECT_EQ(daemon.get("/api/v1/jobs?status=succeeded").body["jobs"].size(), 5u);
  EXPECT_EQ(daemon.get("/api/v1/jobs?status=queued,running").body["jobs"].size(), 0u);

  std::vector<std::int64_t> seen;
  std::string url = "/api/v1/jobs?limit=2";
  for (int page = 0; page < 10; ++page) {
    const auto r = daemon.get(url);
    ASSERT_EQ(r.status, 200) << r.text;
    for (const auto& j : r.body["jobs"])
      seen.push_back(j["id"].get<std::int64_t>());
    if (r.body["next_cursor"].is_null()) break;
    url = "/api/v1/jobs?limit=2&cursor=" + r.body["next_cursor"].get<std::string>();
  }
  EXPECT_EQ(seen, (std::vector<std::int64_t>{ids[4], ids[3], ids[2], ids[1], ids[0]}));
}

TEST_F(Api, LongPollReturnsWhenTheJobEnds) {
  const auto id = daemon.submit(slow_job(3, 200));
  const auto started = std::chrono::steady_clock::now();
  const auto r = daemon.get("/api/v1/jobs/" + std::to_string(id) + "?wait=30");
  const auto waited = std::chrono::steady_clock::now() - started;
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["status"], "succeeded");
  EXPECT_GE(waited, 500ms);  // it did wait for the ~600 ms job...
  EXPECT_LT(waited, 10s);    // ...and answered when it ended, not at the deadline

  const auto id2 = daemon.submit(slow_job(50, 200));
  const auto t0 = std::chrono::steady_clock::now();
  const auto r2 = daemon.get("/api/v1/jobs/" + std::to_string(id2) + "?wait=0.3");
  const auto short_wait = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r2.status, 200);
  EXPECT_NE(r2.body["status"], "succeeded");
  EXPECT_GE(short_wait, 250ms);
  EXPECT_LT(short_wait, 3s);
}

TEST_F(Api, CancelStopsQueuedJobsAtOnceAndRunningJobsAfterTheirPoint) {
  const auto running = daemon.submit(slow_job(100, 100));
  const auto queued = daemon.submit(slow_job(5, 100));
  ASSERT_TRUE(eventually([&] {
    return daemon.get("/api/v1/jobs/" + std::to_string(running)).body["progress"]["done"] >= 2;
  }));

  const auto c1 = daemon.post("/api/v1/jobs/" + std::to_string(queued) + "/cancel", "");
  ASSERT_EQ(c1.status, 200) << c1.text;
  EXPECT_EQ(c1.body["status"], "cancelled");
  EXPECT_EQ(c1.body["progress"]["done"], 0);

  const auto c2 = daemon.post("/api/v1/jobs/" + std::to_string(running) + "/cancel", "");
  ASSERT_EQ(c2.status, 200) << c2.text;
  EXPECT_TRUE(c2.body["cancel_requested"].get<bool>());
  const json job = daemon.wait_job(running, 10s);
  EXPECT_EQ(job["status"], "cancelled");
  EXPECT_EQ(job["error"]["type"], "cancelled");
  const auto done = job["progress"]["done"].get<int>();
  EXPECT_GE(done, 2);
  EXPECT_LT(done, 100);
  // The results of the points measured before the cancel are kept.
  const auto rows = daemon.get("/api/v1/jobs/" + std::to_string(running) + "/results");
  EXPECT_EQ(int(rows.body["results"].size()), done);

  const auto finished = daemon.post("/api/v1/jobs/" + std::to_string(running) + "/cancel", "");
  expect_error(finished, 409, "job_finished");
  EXPECT_EQ(finished.body["error"]["job_id"], running) << finished.text;
  EXPECT_EQ(finished.body["error"]["job_status"], "cancelled") << finished.text;
  EXPECT_FALSE(finished.body["error"].contains("details")) << finished.text;
  expect_error(daemon.post("/api/v1/jobs/424242/cancel", ""), 404, "not_found");

  // The device is free again.
  EXPECT_EQ(daemon.wait_job(daemon.submit(gemm_sweep()))["status"], "succeeded");
}

TEST_F(Api, CancelOfShortPointsStopsAfterTheCurrentOneNotAfterTheQueuedOnes) {
  // Points under 2 ms travel to the worker up to 64 at a time (and the window is refilled once
  // half of it is measured, so 32 or more are queued); cancel must not wait for the queue.
  const auto id = daemon.submit(slow_job(5000, 1.5));
  ASSERT_TRUE(eventually([&] {
    return daemon.get("/api/v1/jobs/" + std::to_string(id)).body["progress"]["done"] >= 100;
  }));
  const auto c = daemon.post("/api/v1/jobs/" + std::to_string(id) + "/cancel", "");
  ASSERT_EQ(c.status, 200);
  const int at_cancel = c.body["progress"]["done"].get<int>();
  const json job = daemon.wait_job(id, 10s);
  EXPECT_EQ(job["status"], "cancelled");
  // Stored progress trails measurement by the group commit (2 ms, more for PostgreSQL on a busy
  // machine) and reply batching (5 ms): a handful of 1.5 ms points, against the 32 or more a
  // queue would add.
  EXPECT_LT(job["progress"]["done"].get<int>() - at_cancel, 32) << job.dump();
  // The points the worker dropped unmeasured are not counted as measured.
  EXPECT_EQ(job["error"]["message"],
            "cancelled after " + job["progress"]["done"].dump() + " of 5000 points")
      << job.dump();
}

// A point that runs on (here 60 s of the mock's delay; a hanging kernel would run until its
// watchdog, 30 s or more) is not waited for: 3 s after the cancel its worker is killed and
// replaced, the job ends cancelled with the points measured before, and the device takes the
// next job.
TEST_F(Api, CancelStopsAPointThatRunsOnWithinSeconds) {
  const auto id = daemon.submit(stream_sweep(3, 60000, 1024));
  ASSERT_TRUE(eventually([&] {
    const auto devices = daemon.get("/api/v1/devices").body["devices"];
    return devices[0]["state"] == "busy" && devices[0]["current_job"] == id;
  }));
  const auto t0 = std::chrono::steady_clock::now();
  const auto c = daemon.post("/api/v1/jobs/" + std::to_string(id) + "/cancel", "");
  ASSERT_EQ(c.status, 200) << c.text;
  const json job = daemon.wait_job(id, 20s);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(job["status"], "cancelled") << job.dump();
  EXPECT_EQ(job["error"]["message"], "cancelled after 0 of 3 points") << job.dump();
  EXPECT_GE(took, 2s);
  EXPECT_LT(took, 10s);
  EXPECT_TRUE(
      daemon.get("/api/v1/jobs/" + std::to_string(id) + "/results").body["results"].empty());
  // The device is free again, and the kill is not reported as a fault of the device.
  EXPECT_EQ(daemon.wait_job(daemon.submit(gemm_sweep()))["status"], "succeeded");
  const auto device = daemon.get("/api/v1/devices").body["devices"][0];
  EXPECT_FALSE(device.contains("last_error") && device["last_error"].is_string() &&
               !device["last_error"].get<std::string>().empty())
      << device.dump();
}

TEST_F(Api, AJobThatEndedIsDeletedWithItsResultsAndEveryStreamIsTold) {
  const auto done = daemon.submit(slow_job(3, 1));
  const auto kept = daemon.submit(slow_job(2, 1));
  ASSERT_EQ(daemon.wait_job(done, 10s)["status"], "succeeded");
  ASSERT_EQ(daemon.wait_job(kept, 10s)["status"], "succeeded");
  sse_reader stream(daemon.port());
  ASSERT_TRUE(stream.wait_ready());

  const std::string path = "/api/v1/jobs/" + std::to_string(done);
  const auto gone = daemon.del(path);
  EXPECT_EQ(gone.status, 204) << gone.text;
  EXPECT_TRUE(gone.text.empty()) << gone.text;
  expect_error(daemon.get(path), 404, "not_found");
  expect_error(daemon.get(path + "/results"), 404, "not_found");
  const auto listed = daemon.get("/api/v1/jobs").body["jobs"];
  ASSERT_EQ(listed.size(), 1u) << listed.dump();
  EXPECT_EQ(listed[0]["id"], kept);
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + std::to_string(kept) + "/results").body["results"].size(),
            2u);
  EXPECT_TRUE(eventually([&] {
    return stream.has([&](const sse_event& e) {
      return e.type == "job_deleted" && e.data == json{{"job_id", done}};
    });
  }));
  expect_error(daemon.del(path), 404, "not_found");
  expect_error(daemon.del("/api/v1/jobs/abc"), 404, "not_found");
  const std::string metrics = daemon.get("/metrics").text;
  EXPECT_NE(metrics.find("\nkernelscan_jobs_deleted_total 1\n"), std::string::npos) << metrics;
  // A new job takes a new id, never the deleted one's.
  EXPECT_GT(daemon.submit(slow_job(1, 1)), kept);
}

TEST_F(Api, AQueuedOrRunningJobIsNotDeletedUntilItEnds) {
  const auto running = daemon.submit(slow_job(100, 100));
  const auto queued = daemon.submit(slow_job(5, 100));
  ASSERT_TRUE(eventually([&] {
    return daemon.get("/api/v1/jobs/" + std::to_string(running)).body["status"] == "running";
  }));
  for (const auto& [id, status] : {std::pair{running, "running"}, std::pair{queued, "queued"}}) {
    const auto refused = daemon.del("/api/v1/jobs/" + std::to_string(id));
    expect_error(refused, 409, "job_not_finished");
    EXPECT_EQ(refused.body["error"]["job_id"], id) << refused.text;
    EXPECT_EQ(refused.body["error"]["job_status"], status) << refused.text;
    EXPECT_NE(refused.body["error"]["message"].get<std::string>().find("cancel it first"),
              std::string::npos)
        << refused.text;
  }
  ASSERT_EQ(daemon.post("/api/v1/jobs/" + std::to_string(running) + "/cancel", "").status, 200);
  ASSERT_EQ(daemon.wait_job(running, 10s)["status"], "cancelled");
  EXPECT_EQ(daemon.del("/api/v1/jobs/" + std::to_string(running)).status, 204);
  // The device goes on to the next job.
  EXPECT_EQ(daemon.wait_job(queued, 20s)["status"], "succeeded");
  EXPECT_EQ(daemon.del("/api/v1/jobs/" + std::to_string(queued)).status, 204);
}

TEST(ApiRetention, JobsThatEndedLongerAgoThanTheRetentionAreDeletedAndOthersKept) {
  // 0.00003 days: 2.6 s, swept every second.
  daemon_process daemon({.extra_args = {"--retention-days", "0.00003"}});
  daemon.start();
  sse_reader stream(daemon.port());
  ASSERT_TRUE(stream.wait_ready());
  const auto old = daemon.submit(slow_job(1, 1));
  ASSERT_EQ(daemon.wait_job(old, 10s)["status"], "succeeded");
  const auto ended = std::chrono::steady_clock::now();
  const auto long_running = daemon.submit(slow_job(1, 9000));
  ASSERT_TRUE(eventually(
      [&] { return daemon.get("/api/v1/jobs/" + std::to_string(old)).status == 404; }, 15s));
  // Not before its time was up (the sweep reads the wall clock: a little slack either way).
  EXPECT_GE(std::chrono::steady_clock::now() - ended, 2s);
  EXPECT_TRUE(eventually([&] {
    return stream.has([&](const sse_event& e) {
      return e.type == "job_deleted" && e.data == json{{"job_id", old}};
    });
  }));
  // A job still running, however long, is kept.
  const auto running = daemon.get("/api/v1/jobs/" + std::to_string(long_running));
  EXPECT_EQ(running.status, 200);
  EXPECT_EQ(running.body["status"], "running") << running.text;
  EXPECT_NE(daemon.log().find("retention: deleted 1 job"), std::string::npos) << daemon.log();
}

TEST_F(Api, IdempotencyKeyReturnsTheSameJobOnRetry) {
  const std::string body = gemm_sweep().dump();
  const httplib::Headers key{{"Idempotency-Key", "retry-me-1"}};
  const auto first = daemon.post("/api/v1/jobs", body, key);
  ASSERT_EQ(first.status, 201) << first.text;
  const auto again = daemon.post("/api/v1/jobs", body, key);
  ASSERT_EQ(again.status, 200) << again.text;
  EXPECT_EQ(again.body["id"], first.body["id"]);
  EXPECT_EQ(again.header("Idempotent-Replayed"), "true");

  json other = gemm_sweep();
  other["name"] = "something else";
  const auto conflict = daemon.post("/api/v1/jobs", other.dump(), key);
  expect_error(conflict, 409, "idempotency_conflict");
  EXPECT_EQ(conflict.body["error"]["job_id"], first.body["id"]) << conflict.text;
  expect_error(daemon.post("/api/v1/jobs", body, {{"Idempotency-Key", std::string(201, 'k')}}), 400,
               "invalid_header", "Idempotency-Key");
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 1u);
}

TEST_F(Api, BadInputGetsAClearErrorNamingTheField) {
  expect_error(daemon.post("/api/v1/jobs", std::string("{\"kernel\": ")), 400, "invalid_json");
  expect_error(daemon.post("/api/v1/jobs", std::string("[1,2]")), 422, "invalid_spec");
  expect_error(daemon.post("/api/v1/jobs", std::string(1000, '[') + std::string(1000, ']')), 400,
               "invalid_json");
  // Half a UTF-8 character where a value should be: nlohmann quotes it in its message (found by
  // fuzzing imports; it was a 500).
  expect_error(daemon.post("/api/v1/jobs", std::string("{\"kernel\": \xC3\xA9}")), 400,
               "invalid_json");
  // A number no double holds (found by fuzzing; it was a 500).
  expect_error(
      daemon.post("/api/v1/jobs", std::string(R"({"kernel": {"op": "gemm", "m": 1e999}})")), 400,
      "invalid_json");

  json unknown = gemm_sweep();
  unknown["timing"] = {{"min_sample", 5}};
  expect_error(daemon.post_json("/api/v1/jobs", unknown), 422, "invalid_spec", "timing.min_sample");

  json bad_expr = gemm_sweep();
  bad_expr["kernel"]["m"] = "ceil(Q/16)";
  expect_error(daemon.post_json("/api/v1/jobs", bad_expr), 422, "invalid_spec", "kernel.m");

  json not_integer = gemm_sweep();
  not_integer["kernel"]["m"] = "M/3";
  const auto ni = daemon.post_json("/api/v1/jobs", not_integer);
  expect_error(ni, 422, "invalid_spec", "kernel.m");
  EXPECT_NE(ni.text.find("point 0 (M=1024, N=1024)"), std::string::npos) << ni.text;

  json device = gemm_sweep();
  device["device"] = 7;
  expect_error(daemon.post_json("/api/v1/jobs", device), 422, "invalid_spec", "device");

  json hip = gemm_sweep();
  hip["engine"] = "hip";
  expect_error(daemon.post_json("/api/v1/jobs", hip), 422, "invalid_spec", "engine");

  json fault = gemm_sweep();
  fault["mock"] = {{"fault", "crash"}};
  expect_error(daemon.post_json("/api/v1/jobs", fault), 422, "invalid_spec", "mock.fault");

  json huge = gemm_sweep();
  huge["kernel"]["m"] = "M*1000000000";
  expect_error(daemon.post_json("/api/v1/jobs", huge), 422, "invalid_spec", "kernel.m");

  const json kernel_reading_a_file = json::parse(R"({"kernel": {"op": "custom",
      "source": "#include \"/etc/passwd\"\n__global__ void k(float* x) { x[0] = 1; }",
      "entry": "k", "block": [64], "grid": [1],
      "args": [{"name": "x", "type": "f32*", "count": 64, "output": true}]}})");
  const auto included = daemon.post_json("/api/v1/jobs", kernel_reading_a_file);
  expect_error(included, 422, "invalid_spec", "kernel.source");
  EXPECT_EQ(included.body["error"]["details"][0]["message"].get<std::string>().rfind(
                "line 1: #include \"/etc/passwd\" is not allowed", 0),
            0u)
      << included.text;

  for (const char* query : {"limit=0", "limit=abc", "status=bogus", "cursor=-4", "colour=red"}) {
    const std::string name = std::string(query).substr(0, std::string(query).find('='));
    expect_error(daemon.get(std::string("/api/v1/jobs?") + query), 400, "invalid_parameter", name);
  }
  const auto id = daemon.submit(gemm_sweep());
  const std::string job = "/api/v1/jobs/" + std::to_string(id);
  expect_error(daemon.get(job + "?wait=abc"), 400, "invalid_parameter");
  expect_error(daemon.get(job + "?wait=10000"), 400, "invalid_parameter");
  expect_error(daemon.get(job + "/results?format=xml"), 400, "invalid_parameter");
  expect_error(daemon.get(job + "/results?offset=-1"), 400, "invalid_parameter");

  // Nothing half-accepted was stored: only the one valid job exists.
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 1u);
  EXPECT_EQ(daemon.get("/healthz").status, 200);
}

TEST_F(Api, UnknownThingsAre404AndWrongMethods405InTheErrorShape) {
  expect_error(daemon.get("/api/v1/jobs/999999"), 404, "not_found");
  expect_error(daemon.get("/api/v1/jobs/abc"), 404, "not_found");
  expect_error(daemon.get("/api/v1/jobs/999999/results"), 404, "not_found");
  expect_error(daemon.get("/api/v1/devices/9"), 404, "not_found");
  expect_error(daemon.get("/no/such/route"), 404, "not_found");
  expect_error(daemon.get("/assets/nope.js"), 404, "not_found");
  const auto wrong = daemon.get("/api/v1/jobs/1/cancel");
  expect_error(wrong, 405, "method_not_allowed");
  EXPECT_EQ(wrong.header("Allow"), "POST");
}

TEST_F(Api, ServesThePageTheAssetsAndTheContract) {
  const auto page = daemon.get("/");
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(page.header("Content-Type").rfind("text/html", 0), 0u);
  EXPECT_NE(page.text.find("kernelscan"), std::string::npos);
  const std::string etag = page.header("ETag");
  ASSERT_FALSE(etag.empty());

  httplib::Client c("127.0.0.1", daemon.port());
  const auto cached = c.Get("/", {{"If-None-Match", etag}});
  ASSERT_TRUE(cached);
  EXPECT_EQ(cached->status, 304);

  const auto js = daemon.get("/assets/app.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.header("Content-Type").rfind("text/javascript", 0), 0u);

  // Text assets go out as compressed at build time to clients that take gzip, as they are to
  // others; both are the same file.
  c.set_decompress(false);  // then httplib's client offers no encoding
  const auto plain = c.Get("/assets/echarts.min.js");
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->has_header("Content-Encoding"));
  EXPECT_GT(plain->body.size(), 500'000u);
  c.set_decompress(true);
  const auto zipped = c.Get("/assets/echarts.min.js", {{"Accept-Encoding", "gzip, deflate"}});
  ASSERT_TRUE(zipped);
  EXPECT_EQ(zipped->status, 200);
  EXPECT_EQ(zipped->get_header_value("Content-Encoding"), "gzip");
  EXPECT_EQ(zipped->get_header_value("Vary"), "Accept-Encoding");
  EXPECT_LT(std::stoul(zipped->get_header_value("Content-Length")), plain->body.size() / 2);
  EXPECT_TRUE(zipped->body == plain->body) << "the gzip copy is not the same file";

  const auto contract = daemon.get("/api/v1/openapi.yaml");
  ASSERT_EQ(contract.status, 200);
  EXPECT_EQ(contract.text.rfind("openapi:", 0), 0u);
}

// Result rows go out gzipped, in every format, to a client that takes gzip (the dashboard's
// browser, curl --compressed), once: they inflate to what a client without it reads.
TEST_F(Api, ResultsAreCompressedForAClientThatTakesGzip) {
  const auto id = daemon.submit(json::parse(R"({
    "kernel": {"op": "stream", "variant": "triad", "n": "N"},
    "sweep": {"N": {"from": 1024, "to": 1024000, "step": 1024}}, "mock": {"delay_ms": 0}})"));
  ASSERT_EQ(daemon.wait_job(id, 60s)["status"], "succeeded");
  httplib::Client c("127.0.0.1", daemon.port());
  const std::string base = "/api/v1/jobs/" + std::to_string(id) + "/results?format=";
  for (const std::string format : {"jsonl", "json", "csv", "jsonl&fields=index,time_us.median"}) {
    c.set_decompress(false);  // then httplib's client offers no encoding
    const auto plain = c.Get(base + format);
    ASSERT_TRUE(plain);
    ASSERT_EQ(plain->status, 200) << format;
    EXPECT_FALSE(plain->has_header("Content-Encoding")) << format;
    EXPECT_EQ(plain->get_header_value("Vary"), "Accept-Encoding") << format;
    const auto raw = c.Get(base + format, {{"Accept-Encoding", "gzip"}});
    ASSERT_TRUE(raw);
    EXPECT_EQ(raw->get_header_value("Content-Encoding"), "gzip") << format;
    EXPECT_EQ(raw->get_header_value_count("Content-Encoding"), 1u) << format;
    EXPECT_EQ(raw->body.substr(0, 2), "\x1f\x8b") << format;
    EXPECT_LT(raw->body.size(), plain->body.size() / 2) << format;
    c.set_decompress(true);
    const auto zipped = c.Get(base + format, {{"Accept-Encoding", "gzip"}});
    ASSERT_TRUE(zipped);
    EXPECT_TRUE(zipped->body == plain->body) << format << ": not the same rows";
  }
}

TEST_F(Api, CurlStyleFormContentTypeIsReadAsJson) {
  // curl -d @job.json sends application/x-www-form-urlencoded; bodies over 8 KB must work too.
  json spec = gemm_sweep();
  json values = json::array();
  for (int i = 1; i <= 2000; ++i)
    values.push_back(i);
  spec["sweep"] = {{"M", values}, {"N", {64}}};
  ASSERT_GT(spec.dump().size(), 8192u);
  httplib::Client c("127.0.0.1", daemon.port());
  const auto r = c.Post("/api/v1/jobs", spec.dump(), "application/x-www-form-urlencoded");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201) << r->body;
}

// One keep-alive connection that sends requests exactly as written (no header added) and reads
// each answer (headers and a Content-Length body), or "" if none came within `timeout`.
class raw_connection {
 public:
  explicit raw_connection(int port) : m_fd(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(std::uint16_t(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(m_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(m_fd);
      throw std::runtime_error("cannot connect to the daemon");
    }
  }
  raw_connection(const raw_connection&) = delete;
  raw_connection& operator=(const raw_connection&) = delete;
  ~raw_connection() { close(m_fd); }

  std::string exchange(const std::string& request, std::chrono::milliseconds timeout) {
    if (send(m_fd, request.data(), request.size(), 0) != ssize_t(request.size())) return "";
    std::string in;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      const auto head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::size_t length = 0;
        const auto cl = in.find("Content-Length: ");
        if (cl != std::string::npos && cl < head_end) length = std::stoul(in.substr(cl + 16));
        if (in.size() >= head_end + 4 + length) return in;
      }
      pollfd p{m_fd, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      const ssize_t n = recv(m_fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, std::size_t(n));
    }
    return "";
  }

 private:
  int m_fd;
};

// Results read while their job is deleted end unfinished, never complete with rows missing: the
// rows go a thousand at a time after the job, under a reader paging through them.
TEST_F(Api, ResultsReadWhileTheJobIsDeletedEndUnfinished) {
  const auto id = daemon.submit(json::parse(R"({
    "name": "20,000 points", "kernel": {"op": "stream", "variant": "triad", "n": "N*M"},
    "sweep": {"M": {"from": 1, "to": 4}, "N": {"from": 1024, "to": 5120000, "step": 1024}},
    "mock": {"delay_ms": 0}})"));
  ASSERT_EQ(daemon.wait_job(id, 60s)["status"], "succeeded");
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  int small = 4096;  // a small receive buffer, so that the daemon waits on this reader
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(std::uint16_t(daemon.port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string request = "GET /api/v1/jobs/" + std::to_string(id) +
                              "/results HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(send(fd, request.data(), request.size(), 0), ssize_t(request.size()));
  std::string in;
  auto read_some = [&](std::size_t until, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (in.size() < until && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return false;  // the end
      in.append(buf, std::size_t(n));
    }
    return true;
  };
  ASSERT_TRUE(read_some(64 * 1024, 10s));
  ASSERT_NE(in.find("200 OK"), std::string::npos) << in.substr(0, 200);
  EXPECT_EQ(daemon.del("/api/v1/jobs/" + std::to_string(id)).status, 204);
  while (read_some(std::string::npos, 30s)) {
  }
  close(fd);
  // No last chunk, and the JSON is not closed.
  EXPECT_EQ(in.find("\r\n0\r\n\r\n"), std::string::npos) << in.substr(in.size() - 200);
  EXPECT_EQ(in.find("]}"), std::string::npos) << in.substr(in.size() - 200);
  EXPECT_NE(daemon.log().find("was deleted while its results were read"), std::string::npos);
}

// RFC 9110 8.6: a 204 carries no Content-Length, nor does a 304 carry the length of its own
// empty body (httplib wrote "Content-Length: 0" in both); the connection goes on after either.
TEST_F(Api, A204AndA304StateNoLengthAndTheConnectionGoesOn) {
  const std::int64_t id = daemon.submit(slow_job(1, 0));
  ASSERT_EQ(daemon.wait_job(id)["status"], "succeeded");
  const std::string etag = daemon.get("/").header("ETag");
  ASSERT_FALSE(etag.empty());
  const std::string host = "Host: 127.0.0.1:" + std::to_string(daemon.port()) + "\r\n";
  raw_connection c(daemon.port());
  const auto deleted =
      c.exchange("DELETE /api/v1/jobs/" + std::to_string(id) + " HTTP/1.1\r\n" + host + "\r\n", 5s);
  EXPECT_EQ(deleted.rfind("HTTP/1.1 204 No Content\r\n", 0), 0u) << deleted;
  EXPECT_EQ(deleted.find("Content-Length"), std::string::npos) << deleted;
  const auto cached =
      c.exchange("GET / HTTP/1.1\r\n" + host + "If-None-Match: " + etag + "\r\n\r\n", 5s);
  EXPECT_EQ(cached.rfind("HTTP/1.1 304 Not Modified\r\n", 0), 0u) << cached;
  EXPECT_EQ(cached.find("Content-Length"), std::string::npos) << cached;
  EXPECT_NE(cached.find("ETag: " + etag + "\r\n"), std::string::npos) << cached;
  const auto after = c.exchange("GET /healthz HTTP/1.1\r\n" + host + "\r\n", 5s);
  EXPECT_EQ(after.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << after;
}

TEST_F(Api, APostWithoutABodyOrContentLengthIsAnsweredAtOnce) {
  // `curl -X POST .../cancel` sends neither Content-Length nor a body and keeps the connection
  // open: the request has an empty body (RFC 9112 6.3). httplib alone waits for a body until its
  // 30 s read timeout and then answers 400, so each answer must come well within that. What a
  // client sends after such a head cannot be told from a body it sent all the same, so the
  // connection ends after the answer, and nothing sent after the head is read as a request
  // (HttpFraming.ABodyWithoutAContentLengthIsNeverReadAsARequest).
  const std::int64_t id = daemon.submit(slow_job(1, 0));
  ASSERT_EQ(daemon.wait_job(id)["status"], "succeeded");
  const std::string host = "Host: 127.0.0.1:" + std::to_string(daemon.port()) + "\r\n";
  const auto cancel = raw_connection(daemon.port())
                          .exchange("POST /api/v1/jobs/" + std::to_string(id) +
                                        "/cancel HTTP/1.1\r\n" + host + "\r\n",
                                    20s);
  EXPECT_EQ(cancel.rfind("HTTP/1.1 409", 0), 0u) << cancel;
  EXPECT_NE(cancel.find("\"job_finished\""), std::string::npos) << cancel;
  EXPECT_NE(cancel.find("\r\nConnection: close\r\n"), std::string::npos) << cancel;
  const auto roofline =
      raw_connection(daemon.port())
          .exchange("POST /api/v1/devices/0/roofline HTTP/1.1\r\n" + host + "\r\n", 20s);
  EXPECT_EQ(roofline.rfind("HTTP/1.1 202", 0), 0u) << roofline;
  EXPECT_NE(roofline.find("\r\nConnection: close\r\n"), std::string::npos) << roofline;
  // With "Content-Length: 0", as httplib's client, Python's requests and browsers send it, the
  // connection is kept.
  raw_connection connection(daemon.port());
  const auto again =
      connection.exchange("POST /api/v1/jobs/" + std::to_string(id) + "/cancel HTTP/1.1\r\n" +
                              host + "Content-Length: 0\r\n\r\n",
                          20s);
  EXPECT_EQ(again.rfind("HTTP/1.1 409", 0), 0u) << again;
  EXPECT_EQ(again.find("Connection: close"), std::string::npos) << again;
  const auto health = connection.exchange("GET /healthz HTTP/1.1\r\n" + host + "\r\n", 20s);
  EXPECT_EQ(health.rfind("HTTP/1.1 200", 0), 0u) << health;
}

TEST(ApiDevices, HealthReadinessAndDevices) {
  daemon_process daemon({.mock_devices = 2, .allow_fault_injection = false, .extra_args = {}});
  daemon.start();
  EXPECT_EQ(daemon.get("/healthz").body["status"], "ok");
  const auto ready = daemon.get("/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.body["devices"].size(), 2u);

  const auto devices = daemon.get("/api/v1/devices");
  ASSERT_EQ(devices.status, 200);
  ASSERT_EQ(devices.body["devices"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const auto& d = devices.body["devices"][std::size_t(i)];
    EXPECT_EQ(d["index"], i);
    EXPECT_EQ(d["engine"], "mock");
    EXPECT_EQ(d["model"], "MI300X");
    EXPECT_EQ(d["state"], "idle");
    EXPECT_DOUBLE_EQ(d["datasheet"]["f16_tflops"].get<double>(), 1307.4);
    EXPECT_GT(d["worker_pid"].get<int>(), 0);
  }
  EXPECT_EQ(daemon.get("/api/v1/devices/1").body["index"], 1);
  // A node's devices: this daemon's, a node it does not know (404 naming those it does), and a
  // parameter the list does not take.
  const std::string node = devices.body["devices"][0]["node"].get<std::string>();
  EXPECT_EQ(daemon.get("/api/v1/devices?node=" + node).body["devices"].size(), 2u);
  const auto unknown = daemon.get("/api/v1/devices?node=zz");
  EXPECT_EQ(unknown.status, 404) << unknown.text;
  EXPECT_EQ(unknown.body["error"]["details"][0]["field"], "node") << unknown.text;
  EXPECT_NE(unknown.text.find("(nodes: " + node + ")"), std::string::npos) << unknown.text;
  const auto bogus = daemon.get("/api/v1/devices?bogus=1");
  EXPECT_EQ(bogus.status, 400) << bogus.text;
  EXPECT_EQ(bogus.body["error"]["details"][0]["field"], "bogus") << bogus.text;

  // A job pinned to device 1 runs there.
  json spec = gemm_sweep();
  spec["device"] = 1;
  EXPECT_EQ(daemon.wait_job(daemon.submit(spec))["device"], 1);
}

TEST(ApiQueue, HigherPriorityRunsFirst) {
  daemon_process daemon;
  daemon.start();
  const auto blocker = daemon.submit(slow_job(3, 150));
  json low = slow_job(1, 1);
  low["priority"] = -5;
  json high = slow_job(1, 1);
  high["priority"] = 5;
  const auto low_id = daemon.submit(low);
  const auto high_id = daemon.submit(high);
  const json l = daemon.wait_job(low_id);
  const json h = daemon.wait_job(high_id);
  ASSERT_EQ(daemon.wait_job(blocker)["status"], "succeeded");
  ASSERT_EQ(l["status"], "succeeded");
  ASSERT_EQ(h["status"], "succeeded");
  EXPECT_LT(h["started_at"].get<std::string>(), l["started_at"].get<std::string>());
}

TEST(ApiLimits, HostileKernelsAndExpressionsGetClearErrors) {
  daemon_process daemon(
      {.mock_devices = 1,
       .allow_fault_injection = false,
       .extra_args = {"--max-source-bytes", "1000", "--max-point-bytes", "1048576"}});
  daemon.start();
  auto custom = [](std::string source, json count = "N*64", json options = json::array()) {
    return json{
        {"kernel",
         {{"op", "custom"},
          {"source", std::move(source)},
          {"entry", "k"},
          {"block", {64}},
          {"grid", {1}},
          {"compile_options", std::move(options)},
          {"args",
           {{{"name", "x"}, {"type", "f32*"}, {"count", std::move(count)}, {"output", true}}}}}},
        {"sweep", {{"N", {1, 2}}}}};
  };
  const std::string ok_source = "__global__ void k(float* x) { x[0] = 1; }";
  EXPECT_EQ(daemon.post_json("/api/v1/jobs", custom(ok_source)).status, 201);
  // Source over --max-source-bytes.
  expect_error(daemon.post_json("/api/v1/jobs", custom(std::string(1001, ' ') + ok_source)), 422,
               "invalid_spec", "kernel.source");
  // Buffers over --max-point-bytes (1 MiB): 2^20 floats are 4 MiB, and outputs count twice.
  expect_error(daemon.post_json("/api/v1/jobs", custom(ok_source, "N * 1048576")), 422,
               "invalid_spec", "kernel.args");
  // Compile options outside the allowlist.
  expect_error(daemon.post_json("/api/v1/jobs", custom(ok_source, "N*64", {"-I/etc"})), 422,
               "invalid_spec", "kernel.compile_options[0]");
  expect_error(daemon.post_json("/api/v1/jobs", custom(ok_source, "N*64", {"--include-path=/"})),
               422, "invalid_spec", "kernel.compile_options[0]");
  // Expressions: overflow, division by zero, huge exponents, too long.
  for (const char* expr : {"N * 1e300 * 1e300", "64 / (N - N)", "N ^ 100000", "N ^ 64"}) {
    expect_error(daemon.post_json("/api/v1/jobs", custom(ok_source, expr)), 422, "invalid_spec",
                 "kernel.args[0].count");
  }
  expect_error(daemon.post_json("/api/v1/jobs", custom(ok_source, std::string(1025, 'N'))), 422,
               "invalid_spec", "kernel.args[0].count");
  // A sweep parameter nothing uses, and every expression that does not compile, at once.
  const auto unused = daemon.post_json("/api/v1/jobs", custom(ok_source, 64));
  expect_error(unused, 422, "invalid_spec", "sweep.N");
  json unknown = custom(ok_source, "ceil(M/16)");
  unknown["kernel"]["grid"] = {"K*2"};
  const auto names = daemon.post_json("/api/v1/jobs", unknown);
  expect_error(names, 422, "invalid_spec", "kernel.args[0].count");
  expect_error(names, 422, "invalid_spec", "kernel.grid[0]");
  EXPECT_EQ(names.body["error"]["message"],
            "kernel.grid[0]: \"K*2\": unknown name K (sweep parameters: N) (and 2 more problems)");
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 1u);  // only the valid one
}

TEST(ApiLimits, ConfiguredLimitsAreEnforced) {
  daemon_process daemon({.mock_devices = 1,
                         .allow_fault_injection = false,
                         .extra_args = {"--max-body-bytes", "4096", "--max-sweep-points", "100"}});
  daemon.start();
  json big = gemm_sweep();
  big["name"] = std::string(5000, 'x');
  expect_error(daemon.post_json("/api/v1/jobs", big), 413, "payload_too_large");

  json many = gemm_sweep();
  many["sweep"] = {{"M", {{"from", 1}, {"to", 20}}}, {"N", {{"from", 1}, {"to", 10}}}};
  const auto r = daemon.post_json("/api/v1/jobs", many);
  expect_error(r, 422, "invalid_spec", "sweep");
  EXPECT_NE(r.text.find("200 points"), std::string::npos) << r.text;
}

}  // namespace
}  // namespace kernelscan::testing

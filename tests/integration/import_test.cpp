// POST /api/v1/imports against a real daemon: each source format becomes a finished job that
// reads back like a measured one (the job, its results as JSON, JSON lines and CSV, the list,
// the event stream), bad input gets a 4xx naming what is wrong and stores nothing, and writes
// need a token where tokens are configured.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/support/daemon_process.hpp"
#include "tests/support/import_samples.hpp"

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;

const std::string k_token = "import-token-for-tests-0123456789";

class Imports : public ::testing::Test {
 protected:
  void SetUp() override { daemon.start(); }

  http_reply post(const json& body, const httplib::Headers& headers = {}) const {
    return daemon.post("/api/v1/imports", body.dump(), headers);
  }
  json results(std::int64_t id) const {
    const auto r = daemon.get("/api/v1/jobs/" + std::to_string(id) + "/results");
    EXPECT_EQ(r.status, 200) << r.text;
    return r.body["results"];
  }
  std::vector<std::string> csv_lines(std::int64_t id) const {
    const auto r = daemon.get("/api/v1/jobs/" + std::to_string(id) + "/results?format=csv");
    EXPECT_EQ(r.status, 200) << r.text;
    std::vector<std::string> out;
    std::istringstream in(r.text);
    std::string line;
    while (std::getline(in, line))
      out.push_back(line);
    return out;
  }
  std::size_t job_count() const { return daemon.get("/api/v1/jobs").body["jobs"].size(); }

  daemon_process daemon;
};

void expect_error(const http_reply& r, int status, const std::string& type,
                  const std::string& field, const std::string& says) {
  EXPECT_EQ(r.status, status) << r.text;
  ASSERT_TRUE(r.body.is_object()) << r.text;
  EXPECT_EQ(r.body["error"].value("type", ""), type) << r.text;
  if (field.empty()) return;
  bool found = false;
  for (const auto& d : r.body["error"].value("details", json::array())) {
    if (d.value("field", "") == field && d.value("message", "").find(says) != std::string::npos)
      found = true;
  }
  EXPECT_TRUE(found) << "no error for " << field << " saying \"" << says << "\" in " << r.text;
}

TEST_F(Imports, RocmProfilerResultsBecomeAFinishedJobWithTheSameAnalysis) {
  const auto created = post({{"format", "rocm_profiler"},
                             {"name", "topk+sort on MI300X"},
                             {"labels", {{"team", "moe"}}},
                             {"data", seed_results()}});
  ASSERT_EQ(created.status, 201) << created.text;
  const auto id = created.body["id"].get<std::int64_t>();
  EXPECT_EQ(created.header("Location"), "/api/v1/jobs/" + std::to_string(id));

  const auto got = daemon.get("/api/v1/jobs/" + std::to_string(id));
  ASSERT_EQ(got.status, 200);
  const json& job = got.body;
  EXPECT_EQ(job, created.body);  // the 201 is the job as GET shows it
  EXPECT_EQ(job["status"], "succeeded");
  EXPECT_EQ(job["op"], "import");
  EXPECT_EQ(job["engine"], "import");
  EXPECT_TRUE(job["device"].is_null());
  EXPECT_EQ(job["progress"], json::parse(R"({"done": 4, "total": 4, "ok": 4, "failed": 0})"));
  EXPECT_FALSE(job["finished_at"].is_null());
  EXPECT_TRUE(job["error"].is_null());
  EXPECT_EQ(job["summary"]["best"]["index"], 1);  // triton_append, 6.08 µs
  EXPECT_EQ(job["summary"]["best"]["params"], json::parse(R"({"component": 1})"));
  EXPECT_DOUBLE_EQ(job["summary"]["best"]["median_us"].get<double>(), 6.08);
  EXPECT_EQ(job["spec"]["import"]["format"], "rocm_profiler");
  EXPECT_EQ(job["spec"]["import"]["device"]["model"], "MI300X");
  EXPECT_EQ(job["spec"]["import"]["config"]["num_experts"], 256);

  const json rows = results(id);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0]["name"], "hip_topk");
  EXPECT_EQ(rows[0]["params"]["component"], 0);
  EXPECT_DOUBLE_EQ(rows[0]["time_us"]["p99"].get<double>(), 11.93);
  EXPECT_FALSE(rows[0]["time_us"].contains("ci95_low"));
  EXPECT_EQ(rows[0]["metrics"]["bound"], "latency");
  EXPECT_GT(rows[0]["metrics"]["roof_pct"].get<double>(), 0);
  EXPECT_EQ(rows[0]["environment"]["device"], "AMD Instinct MI300X");
  EXPECT_EQ(rows[3]["name"], "full_pipeline");
  EXPECT_TRUE(rows[3]["metrics"].is_null());
  EXPECT_FALSE(rows[3]["import"]["notes"].empty());

  const auto lines = csv_lines(id);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0].rfind("component,index,status,error_type,median_us,", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find(",flags,correct,speedup,latency_score,combined_score,name,simulated,"),
            std::string::npos)
      << lines[0];
  EXPECT_EQ(lines[1].rfind("0,0,ok,,9.8,9.87,9.21,14.08,0.41,,10.52,11.93,,,,,,,", 0), 0u)
      << lines[1];
  EXPECT_NE(lines[1].find(",latency,skipped,,,,,,hip_topk,false,,,,\r"), std::string::npos)
      << lines[1];

  const auto listed = daemon.get("/api/v1/jobs?label.team=moe&status=succeeded");
  ASSERT_EQ(listed.body["jobs"].size(), 1u);
  EXPECT_EQ(listed.body["jobs"][0]["id"], id);
}

TEST_F(Imports, KernelTraceAndNsysSummaryWithDeviceAndWork) {
  const auto trace = post({{"format", "rocprofv3_kernel_trace"},
                           {"device", "MI300X"},
                           {"work",
                            {{"void gemm<float, 64>(float const*, float const*, float*, int, "
                              "int, int)",
                              {{"flops", 1e9}, {"bytes", 8e6}}}}},
                           {"data", testing::k_longer_trace()}});
  ASSERT_EQ(trace.status, 201) << trace.text;
  const auto trace_id = trace.body["id"].get<std::int64_t>();
  EXPECT_EQ(trace.body["name"], "rocprofv3_kernel_trace import");
  const json rows = results(trace_id);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["name"],
            "void gemm<float, 64>(float const*, float const*, float*, int, int, int)");
  EXPECT_EQ(rows[0]["samples"], 7);
  EXPECT_DOUBLE_EQ(rows[0]["time_us"]["median"].get<double>(), 13.0);
  // From every dispatch's time: seven are enough for a 95% interval of the median.
  EXPECT_TRUE(rows[0]["time_us"].contains("ci95_low"));
  EXPECT_NEAR(rows[0]["metrics"]["tflops"].get<double>(), 1e9 / 13e6, 1e-9);
  EXPECT_EQ(rows[0]["metrics"]["bound"], "compute");
  EXPECT_EQ(rows[0]["metrics"]["roof_source"], "datasheet");
  EXPECT_TRUE(rows[1]["metrics"].is_null());  // the fill: no work given
  // The name's commas are quoted in the CSV.
  const auto lines = csv_lines(trace_id);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].rfind("kernel,index,", 0), 0u) << lines[0];
  EXPECT_NE(lines[1].find(",\"void gemm<float, 64>(float const*, float const*, float*, int, int, "
                          "int)\",false,,,,\r"),
            std::string::npos)
      << lines[1];

  const auto nsys = post({{"format", "nsys_cuda_gpu_kern_sum"},
                          {"device", "H100-SXM"},
                          {"dtype", "f32"},
                          {"name", "sgemm"},
                          {"data", k_nsys}});
  ASSERT_EQ(nsys.status, 201) << nsys.text;
  const auto nsys_id = nsys.body["id"].get<std::int64_t>();
  const auto jl = daemon.get("/api/v1/jobs/" + std::to_string(nsys_id) + "/results?format=jsonl");
  ASSERT_EQ(jl.status, 200);
  std::istringstream in(jl.text);
  std::string line;
  std::vector<json> nsys_rows;
  while (std::getline(in, line))
    nsys_rows.push_back(json::parse(line));
  ASSERT_EQ(nsys_rows.size(), 2u);
  EXPECT_EQ(nsys_rows[0]["name"], "ampere_sgemm_128x64_nn");
  EXPECT_EQ(nsys_rows[0]["samples"], 4);
  EXPECT_DOUBLE_EQ(nsys_rows[0]["import"]["time_pct"].get<double>(), 91.2);
  EXPECT_FALSE(nsys_rows[0]["time_us"].contains("p95"));
  EXPECT_EQ(nsys_rows[0]["environment"]["device"], "NVIDIA H100 SXM");

  // Newest first, beside measured jobs.
  const auto measured = daemon.submit(stream_sweep(2, 0));
  ASSERT_EQ(daemon.wait_job(measured)["status"], "succeeded");
  const auto all = daemon.get("/api/v1/jobs").body["jobs"];
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1]["id"], nsys_id);
  EXPECT_EQ(all[1]["engine"], "import");
  EXPECT_EQ(all[2]["id"], trace_id);
}

TEST_F(Imports, BadInputGetsAClearErrorAndStoresNothing) {
  expect_error(post({{"format", "perfetto"}, {"data", "x"}}), 422, "invalid_import", "format",
               "is not one of");
  expect_error(post({{"format", "rocm_profiler"}}), 422, "invalid_import", "data", "required");
  expect_error(post({{"format", "rocprofv3_kernel_trace"}, {"data", ""}}), 422, "invalid_import",
               "data", "is empty");
  expect_error(post({{"format", "rocprofv3_kernel_trace"},
                     {"data", "Kernel_Name,Start_Timestamp\r\nk,1\r\n"}}),
               422, "invalid_import", "data", "no End_Timestamp column");
  expect_error(post({{"format", "rocprofv3_kernel_trace"},
                     {"data", "Kernel_Name,Start_Timestamp,End_Timestamp\nk,1,2\nk,soon,3\n"}}),
               422, "invalid_import", "data", "line 3, column Start_Timestamp");
  expect_error(post({{"format", "nsys_cuda_gpu_kern_sum"}, {"data", "Name,Instances\nk,1\n"}}), 422,
               "invalid_import", "data", "no Med (ns) column");
  json broken = seed_results();
  broken["components"]["hip_topk"]["p50_us"] = "9.8us";
  expect_error(post({{"format", "rocm_profiler"}, {"data", broken}}), 422, "invalid_import",
               "data.components.hip_topk.p50_us", "must be a number");
  expect_error(post({{"format", "rocm_profiler"}, {"device", "Z80"}, {"data", seed_results()}}),
               422, "invalid_import", "device", "is not a device model");
  // Times measured elsewhere do not pass for a task's submission in ?label.task= filters.
  expect_error(
      post({{"format", "rocm_profiler"}, {"labels", {{"task", "axpy"}}}, {"data", seed_results()}}),
      422, "invalid_import", "labels.task", "is the daemon's");
  const auto not_json = daemon.post("/api/v1/imports", "{\"format\": ");
  expect_error(not_json, 400, "invalid_json", "", "");
  const auto wrong_method = daemon.get("/api/v1/imports");
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_EQ(job_count(), 0u);
}

TEST_F(Imports, IdempotencyKeyAndTheEventStream) {
  // Listen from event 0: the import's job event is in the ring once it is stored.
  const json body = {{"format", "nsys_cuda_gpu_kern_sum"}, {"data", k_nsys}};
  const httplib::Headers key{{"Idempotency-Key", "nsys-run-17"}};
  const auto first = post(body, key);
  ASSERT_EQ(first.status, 201) << first.text;
  const auto again = post(body, key);
  EXPECT_EQ(again.status, 200) << again.text;
  EXPECT_EQ(again.header("Idempotent-Replayed"), "true");
  EXPECT_EQ(again.body["id"], first.body["id"]);
  json other = body;
  other["name"] = "another";
  expect_error(post(other, key), 409, "idempotency_conflict", "", "");
  EXPECT_EQ(job_count(), 1u);

  httplib::Client c("127.0.0.1", daemon.port());
  c.set_read_timeout(20s);
  std::string seen;
  c.Get("/api/v1/events?last_event_id=0", [&](const char* data, std::size_t n) {
    seen.append(data, n);
    return seen.find("\"status\":\"succeeded\"") == std::string::npos;  // stop once it is there
  });
  EXPECT_NE(seen.find("event: job\ndata: {\"id\":" + first.body["id"].dump() + ","),
            std::string::npos)
      << seen;
}

TEST(ImportAccess, NeedsATokenAndRespectsTheBodyLimit) {
  daemon_process probe;
  const std::string tokens = probe.data_dir() + "/tokens";
  std::ofstream(tokens) << k_token << "\n";
  daemon_process daemon({.mock_devices = 1,
                         .allow_fault_injection = false,
                         .extra_args = {"--token-file", tokens, "--max-body-bytes", "65536"}});
  daemon.start();
  const std::string body = json{{"format", "nsys_cuda_gpu_kern_sum"}, {"data", k_nsys}}.dump();
  const httplib::Headers auth{{"Authorization", "Bearer " + k_token}};
  EXPECT_EQ(daemon.post("/api/v1/imports", body).status, 401);
  EXPECT_EQ(daemon.post("/api/v1/imports", body, auth).status, 201);

  std::string big = "Kernel_Name,Start_Timestamp,End_Timestamp\n";
  while (big.size() < 70000)
    big += "k,1000,2000\n";
  const auto too_big = daemon.post(
      "/api/v1/imports", json{{"format", "rocprofv3_kernel_trace"}, {"data", big}}.dump(), auth);
  EXPECT_EQ(too_big.status, 413) << too_big.text;
  EXPECT_EQ(too_big.body["error"]["type"], "payload_too_large");
}

}  // namespace
}  // namespace kernelscan::testing

// Access control, rate limits, CORS, metrics and JSON logs against a real daemon.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/support/daemon_process.hpp"

namespace kernelscan::testing {
namespace {

const std::string k_token = "s3cret-token-for-tests-0123456789";

json small_job() {
  return json::parse(R"({"kernel": {"op": "stream", "variant": "copy", "n": 4096}})");
}

std::string token_file(const daemon_process& d) {
  const std::string path = d.data_dir() + "/tokens";
  std::ofstream(path) << "# test tokens\n" << k_token << "\n";
  return path;
}

http_reply get_with(const daemon_process& d, const std::string& path,
                    const httplib::Headers& headers) {
  httplib::Client c("127.0.0.1", d.port());
  const auto r = c.Get(path.c_str(), headers);
  http_reply out;
  if (!r) return out;
  out.status = r->status;
  out.text = r->body;
  out.headers = r->headers;
  if (r->get_header_value("Content-Type").rfind("application/json", 0) == 0) {
    out.body = json::parse(r->body, nullptr, false);
  }
  return out;
}

TEST(Security, WritesNeedATokenWhenTokensAreConfigured) {
  daemon_process probe;
  daemon_process daemon({.mock_devices = 1,
                         .allow_fault_injection = false,
                         .extra_args = {"--token-file", token_file(probe)}});
  daemon.start();
  const std::string body = small_job().dump();

  const auto none = daemon.post("/api/v1/jobs", body);
  EXPECT_EQ(none.status, 401) << none.text;
  EXPECT_EQ(none.body["error"]["type"], "unauthorized");
  EXPECT_EQ(none.header("WWW-Authenticate"), R"(Bearer realm="kernelscan")");
  EXPECT_EQ(daemon.post("/api/v1/jobs", body, {{"Authorization", "Bearer wrong-token-0123456789"}})
                .status,
            401);

  // The token is compared as sent: httplib percent-decodes header values, and "%30" is not "0".
  std::string encoded = k_token;
  encoded.replace(encoded.find('0'), 1, "%30");
  const auto percent = daemon.post("/api/v1/jobs", body, {{"Authorization", "Bearer " + encoded}});
  EXPECT_EQ(percent.status, 401) << percent.text;
  EXPECT_EQ(percent.body["error"]["message"], "the bearer token is not valid");

  const auto ok = daemon.post("/api/v1/jobs", body, {{"Authorization", "Bearer " + k_token}});
  ASSERT_EQ(ok.status, 201) << ok.text;
  const std::string job = "/api/v1/jobs/" + ok.body["id"].dump();
  EXPECT_EQ(daemon.post(job + "/cancel", "").status, 401);

  // Reads stay open without --auth-reads.
  EXPECT_EQ(daemon.get(job).status, 200);
  EXPECT_EQ(daemon.get("/api/v1/jobs").status, 200);
  EXPECT_EQ(daemon.get("/metrics").status, 200);
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 1u);  // the refused ones left no job
}

TEST(Security, BytesThatAreNotTextInAPathOrQueryGetA4xxNotA500) {
  daemon_process daemon({.mock_devices = 1, .allow_fault_injection = false, .extra_args = {}});
  daemon.start();
  for (const char* path :
       {"/%FF", "/api/v1/jobs/%FF", "/api/v1/jobs?status=%FF", "/api/v1/jobs/1/results?format=%FF",
        "/api/v1/devices/%FF", "/api/v1/devices/%FF/0", "/api/v1/tasks/%FF", "/api/v1/tasks/%00"}) {
    const auto r = daemon.get(path);
    EXPECT_GE(r.status, 400) << path << ": " << r.text;
    EXPECT_LT(r.status, 500) << path << ": " << r.text;
    EXPECT_TRUE(r.body.is_object() && r.body.contains("error")) << path << ": " << r.text;
  }
  // A name shown in a message is escaped and cut: no NUL ends the message early, and a long one
  // is not echoed whole.
  const auto nul = daemon.get("/api/v1/tasks/a%00b");
  EXPECT_EQ(nul.body["error"]["message"], "no task \"a\\u0000b\"") << nul.text;
  const auto longer = daemon.get("/api/v1/tasks/" + std::string(5000, 'x'));
  EXPECT_EQ(longer.status, 404);
  EXPECT_LT(longer.text.size(), 600u) << longer.text.size();
  EXPECT_EQ(daemon.get("/healthz").status, 200);
}

TEST(Security, AuthReadsProtectsDataButNotProbesOrThePage) {
  daemon_process probe;
  daemon_process daemon({.mock_devices = 1,
                         .allow_fault_injection = false,
                         .extra_args = {"--token-file", token_file(probe), "--auth-reads"}});
  daemon.start();  // its readiness wait uses /readyz without a token
  for (const char* path : {"/api/v1/jobs", "/api/v1/devices", "/api/v1/jobs/1", "/metrics"}) {
    EXPECT_EQ(daemon.get(path).status, 401) << path;
  }
  const httplib::Headers auth{{"Authorization", "Bearer " + k_token}};
  EXPECT_EQ(get_with(daemon, "/api/v1/jobs", auth).status, 200);
  EXPECT_EQ(get_with(daemon, "/api/v1/devices", auth).status, 200);
  for (const char* path : {"/healthz", "/readyz", "/", "/assets/app.js", "/api/v1/openapi.yaml"}) {
    EXPECT_EQ(daemon.get(path).status, 200) << path;
  }
}

TEST(Security, SubmissionsAreRateLimitedPerClient) {
  daemon_process daemon(
      {.mock_devices = 1, .allow_fault_injection = false, .extra_args = {"--rate-limit", "60"}});
  daemon.start();
  int accepted = 0;
  http_reply limited;
  for (int i = 0; i < 10; ++i) {
    auto r = daemon.post_json("/api/v1/jobs", small_job());
    if (r.status == 201) {
      ++accepted;
    } else {
      limited = r;
      break;
    }
  }
  EXPECT_EQ(accepted, 6);  // the burst: a tenth of the per-minute rate
  EXPECT_EQ(limited.status, 429) << limited.text;
  EXPECT_EQ(limited.body["error"]["type"], "rate_limited");
  EXPECT_EQ(limited.header("Retry-After"), "1");
  // Reads are not limited.
  for (int i = 0; i < 20; ++i)
    ASSERT_EQ(daemon.get("/api/v1/jobs").status, 200);
}

TEST(Security, CorsIsOffUnlessConfigured) {
  {
    daemon_process daemon;
    daemon.start();
    const auto r = get_with(daemon, "/api/v1/jobs", {{"Origin", "https://evil.example"}});
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(r.headers.find("Access-Control-Allow-Origin") == r.headers.end());
    httplib::Client c("127.0.0.1", daemon.port());
    const auto pre = c.Options("/api/v1/jobs", {{"Origin", "https://evil.example"},
                                                {"Access-Control-Request-Method", "POST"}});
    ASSERT_TRUE(pre);
    EXPECT_EQ(pre->status, 405);
  }
  {
    daemon_process daemon({.mock_devices = 1,
                           .allow_fault_injection = false,
                           .extra_args = {"--cors-origin", "https://dash.example"}});
    daemon.start();
    const auto ok = get_with(daemon, "/api/v1/jobs", {{"Origin", "https://dash.example"}});
    EXPECT_EQ(ok.header("Access-Control-Allow-Origin"), "https://dash.example");
    const auto other = get_with(daemon, "/api/v1/jobs", {{"Origin", "https://evil.example"}});
    EXPECT_TRUE(other.headers.find("Access-Control-Allow-Origin") == other.headers.end());
    httplib::Client c("127.0.0.1", daemon.port());
    const auto pre = c.Options("/api/v1/jobs", {{"Origin", "https://dash.example"},
                                                {"Access-Control-Request-Method", "POST"}});
    ASSERT_TRUE(pre);
    EXPECT_EQ(pre->status, 204);
    EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Methods"), "GET, HEAD, POST");
    EXPECT_NE(pre->get_header_value("Access-Control-Allow-Headers").find("Authorization"),
              std::string::npos);
  }
}

TEST(Operations, MetricsInPrometheusTextFormat) {
  daemon_process daemon({.mock_devices = 2, .allow_fault_injection = false, .extra_args = {}});
  daemon.start();
  const auto id = daemon.submit(json::parse(
      R"({"kernel": {"op": "stream", "variant": "triad", "n": "N"}, "sweep": {"N": [1024, 2048, 4096]}})"));
  ASSERT_EQ(daemon.wait_job(id)["status"], "succeeded");
  (void)daemon.get("/api/v1/jobs/" + std::to_string(id));
  (void)daemon.get("/no/such/thing");

  const auto m = daemon.get("/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(m.header("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
  const std::string& t = m.text;
  for (const char* line : {
           "kernelscan_build_info{version=\"0.1.0\"} 1",
           "kernelscan_queue_depth 0",
           "kernelscan_jobs{state=\"succeeded\"} 1",
           "kernelscan_jobs{state=\"queued\"} 0",
           "kernelscan_points_measured_total 3",
           "kernelscan_points_unstored 0",
           "kernelscan_worker_restarts_total 0",
           "kernelscan_devices{state=\"idle\"} 2",
           "# TYPE kernelscan_http_request_duration_seconds histogram",
           "kernelscan_http_requests_total{method=\"POST\",route=\"/api/v1/jobs\",code=\"201\"} 1",
           "kernelscan_http_requests_total{method=\"GET\",route=\"unmatched\",code=\"404\"} 1",
           "kernelscan_http_request_duration_seconds_count{method=\"POST\",route=\"/api/v1/jobs\"} "
           "1",
       }) {
    EXPECT_NE(t.find(std::string(line) + "\n"), std::string::npos) << "missing: " << line;
  }
  // Every line is a comment or "name{labels} value".
  std::istringstream in(t);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    EXPECT_EQ(line.rfind("kernelscan_", 0), 0u) << line;
    EXPECT_NO_THROW((void)std::stod(line.substr(space + 1))) << line;
  }
}

TEST(Operations, JsonLogsAreOneObjectPerLine) {
  daemon_process daemon(
      {.mock_devices = 1, .allow_fault_injection = false, .extra_args = {"--log-format", "json"}});
  daemon.start();
  ASSERT_EQ(daemon.wait_job(daemon.submit(small_job()))["status"], "succeeded");
  EXPECT_EQ(daemon.terminate(), 0);
  std::istringstream in(daemon.log());
  std::string line;
  int lines = 0, worker_lines = 0;
  while (std::getline(in, line)) {
    const json j = json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not JSON: " << line;
    for (const char* key : {"time", "level", "logger", "pid", "msg"}) {
      EXPECT_TRUE(j.contains(key)) << key << " missing in " << line;
    }
    ++lines;
    if (j.value("logger", "") == "worker0") ++worker_lines;
  }
  EXPECT_GE(lines, 5);
  EXPECT_GE(worker_lines, 1);  // the workers' lines are JSON too
}

}  // namespace
}  // namespace kernelscan::testing

// Evaluation tasks against a real daemon: an operator defines a task, an agent submits only its
// kernel's source and launch settings, held-out sizes never reach the agent, retired tasks take
// nothing new, and operator tokens guard what is the operator's.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>

#include "tests/support/daemon_process.hpp"
#include "tests/support/required_device.hpp"
#include "tests/support/sse_reader.hpp"

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;

const std::string k_agent_token = "agent-token-for-task-tests-0123";
const std::string k_operator_token = "operator-token-for-task-tests-0123";
const httplib::Headers k_agent = {{"Authorization", "Bearer " + k_agent_token}};
const httplib::Headers k_operator = {{"Authorization", "Bearer " + k_operator_token}};
constexpr std::int64_t k_held_n = 12288;  // the held-out size, never to be seen by an agent

constexpr const char* k_hip_axpy = R"(#include <hip/hip_runtime.h>
extern "C" __global__ void axpy(float* out, const float* a, const float* b, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + s * b[i];
})";

// An axpy task for the mock engine (which reports its verification as the mock's output says).
json axpy_task(const std::string& name = "axpy") {
  json t = parse_json(R"js({
    "description": "out = a + s*b over n floats",
    "engine": "mock",
    "kernel": {"language": "hip", "entry": "axpy", "block": [256, 1, 1],
      "grid": ["ceil(N/256)", 1, 1],
      "args": [{"name": "out", "type": "f32*", "count": "N", "output": true},
               {"name": "a", "type": "f32*", "count": "N"},
               {"name": "b", "type": "f32*", "count": "N"},
               {"name": "s", "type": "f32", "value": 3},
               {"name": "n", "type": "i32", "value": "N"}],
      "flops": "2*N", "bytes": "12*N",
      "reference": {"op": "stream", "variant": "triad", "n": "N", "dtype": "f32",
                    "a": "out", "b": "a", "c": "b", "scalar": 3}},
    "sweep": {"N": [4096, 8192]},
    "held_out": {"N": [12288]},
    "verify": {"trials": 2},
    "timing": {"max_time_ms": 50},
    "fitness": {"target_us": 5},
    "mock": {"output": "correct"}
  })js");
  t["name"] = name;
  return t;
}

http_reply send(const daemon_process& d, const std::string& method, const std::string& path,
                const std::string& body = "", const httplib::Headers& headers = {}) {
  httplib::Client c("127.0.0.1", d.port());
  c.set_read_timeout(std::chrono::seconds(60));
  httplib::Result r = method == "GET" ? c.Get(path.c_str(), headers)
                      : method == "DELETE"
                          ? c.Delete(path.c_str(), headers)
                          : c.Post(path.c_str(), headers, body, "application/json");
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

// The agent's and the operator's token files, written into `probe`'s data directory, and the
// daemon arguments that name them.
std::vector<std::string> token_files(const daemon_process& probe) {
  const std::string writers = probe.data_dir() + "/tokens";
  const std::string operators = probe.data_dir() + "/operator-tokens";
  std::ofstream(writers) << k_agent_token << "\n";
  std::ofstream(operators) << k_operator_token << "\n";
  return {"--token-file", writers, "--operator-token-file", operators};
}

// Every number anywhere in `j` that equals `value`, as paths.
void find_number(const json& j, std::int64_t value, const std::string& at,
                 std::vector<std::string>& found) {
  if (j.is_number_integer() && j.get<std::int64_t>() == value) found.push_back(at);
  if (j.is_object()) {
    for (const auto& [k, v] : j.items())
      find_number(v, value, at + "." + k, found);
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i)
      find_number(j[i], value, at + "[" + std::to_string(i) + "]", found);
  }
}

// No trace of the held-out size in a JSON answer.
void expect_no_held_out_size(const std::string& text, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(text.find("\"held_out\":{"), std::string::npos) << text;
  EXPECT_EQ(text.find("\"N\":12288"), std::string::npos) << text;
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return;
  std::vector<std::string> found;
  find_number(j, k_held_n, "", found);
  EXPECT_TRUE(found.empty()) << found.front() << " in " << text;
}

// The lines of a JSON or JSON Lines answer.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = std::min(text.find('\n', at), text.size());
    if (end > at) out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

TEST(TasksApi, AnOperatorDefinesATaskAndAnAgentSubmitsOnlyItsKernel) {
  daemon_process probe;
  daemon_process daemon({.extra_args = token_files(probe)});
  daemon.start();
  const std::string body = axpy_task().dump();

  // Defining a task is the operator's.
  EXPECT_EQ(send(daemon, "POST", "/api/v1/tasks", body).status, 401);
  const auto by_agent = send(daemon, "POST", "/api/v1/tasks", body, k_agent);
  EXPECT_EQ(by_agent.status, 403) << by_agent.text;
  EXPECT_EQ(by_agent.body["error"]["type"], "forbidden");
  EXPECT_NE(by_agent.text.find("operator token"), std::string::npos) << by_agent.text;
  const auto created = send(daemon, "POST", "/api/v1/tasks", body, k_operator);
  ASSERT_EQ(created.status, 201) << created.text;
  EXPECT_EQ(created.header("Location"), "/api/v1/tasks/axpy");
  EXPECT_EQ(created.body["held_out"]["N"], json::array({k_held_n}));
  const auto again = send(daemon, "POST", "/api/v1/tasks", body, k_operator);
  EXPECT_EQ(again.status, 409) << again.text;
  EXPECT_EQ(again.body["error"]["type"], "task_exists");

  // What an agent reads of it: no held-out sizes.
  const auto seen = daemon.get("/api/v1/tasks/axpy");
  ASSERT_EQ(seen.status, 200) << seen.text;
  EXPECT_FALSE(seen.body.contains("held_out")) << seen.text;
  expect_no_held_out_size(seen.text, "GET task");
  EXPECT_EQ(seen.body["sweep"]["N"], json::array({4096, 8192}));
  EXPECT_EQ(seen.body["public_points"], 2);
  EXPECT_EQ(seen.body["held_out_points"], 1);
  EXPECT_EQ(seen.body["kernel"]["args"].size(), 5u);
  EXPECT_EQ(seen.body["dtypes"], json::array({"f32", "i32"}));
  EXPECT_EQ(seen.body["verify"]["trials"], 2);
  EXPECT_EQ(seen.body["verify"]["atol"], 1e-4);  // f32's default, stated
  EXPECT_EQ(seen.body["fitness"]["target_us"], 5);
  EXPECT_EQ(seen.body["kernel"]["flops"], "2*N");
  const auto listed = daemon.get("/api/v1/tasks");
  ASSERT_EQ(listed.body["tasks"].size(), 1u);
  expect_no_held_out_size(listed.text, "GET tasks");
  const auto as_operator = send(daemon, "GET", "/api/v1/tasks/axpy", "", k_operator);
  EXPECT_EQ(as_operator.body["held_out"]["N"], json::array({k_held_n})) << as_operator.text;

  // A submission may not touch what the task fixes.
  const json honest = {{"source", k_hip_axpy}, {"entry", "axpy"}, {"labels", {{"gen", "7"}}}};
  for (const auto& [field, value] :
       std::vector<std::pair<std::string, json>>{{"verify", {{"trials", 0}}},
                                                 {"sweep", {{"N", {16}}}},
                                                 {"reference", {{"op", "stream"}}},
                                                 {"fitness", {{"target_us", 1e9}}},
                                                 {"held_out", {{"N", {16}}}},
                                                 {"args", json::array()},
                                                 {"language", "cuda"}}) {
    json cheat = honest;
    cheat[field] = value;
    const auto refused =
        send(daemon, "POST", "/api/v1/tasks/axpy/submissions", cheat.dump(), k_agent);
    EXPECT_EQ(refused.status, 422) << field << ": " << refused.text;
    ASSERT_EQ(refused.body["error"]["details"].size(), 1u) << refused.text;
    EXPECT_EQ(refused.body["error"]["details"][0]["field"], field) << refused.text;
    EXPECT_NE(refused.text.find("fixed by task \\\"axpy\\\""), std::string::npos) << refused.text;
  }
  const auto no_source = send(daemon, "POST", "/api/v1/tasks/axpy/submissions",
                              json{{"entry", "axpy"}}.dump(), k_agent);
  EXPECT_EQ(no_source.status, 422) << no_source.text;
  EXPECT_EQ(no_source.body["error"]["details"][0]["field"], "source") << no_source.text;
  // A launch that is invalid only at the held-out size is refused without describing it.
  json probing = honest;
  probing["grid"] = {"N > 10000 ? 0 : ceil(N/256)", 1, 1};
  const auto probed =
      send(daemon, "POST", "/api/v1/tasks/axpy/submissions", probing.dump(), k_agent);
  EXPECT_EQ(probed.status, 422) << probed.text;
  EXPECT_EQ(probed.body["error"]["details"][0]["field"], "grid[0]") << probed.text;
  EXPECT_NE(probed.text.find("a held-out point (its details are not shown)"), std::string::npos)
      << probed.text;
  expect_no_held_out_size(probed.text, "a refused submission");
  // Nor by the value the candidate's expression takes there (1 - 12288 = -12287).
  probing["grid"] = {"1 - N*(N!=4096)*(N!=8192)", 1, 1};
  const auto valued =
      send(daemon, "POST", "/api/v1/tasks/axpy/submissions", probing.dump(), k_agent);
  EXPECT_EQ(valued.status, 422) << valued.text;
  EXPECT_EQ(valued.body["error"]["details"][0]["message"],
            "is not valid at a held-out point (its details are not shown)")
      << valued.text;
  EXPECT_EQ(valued.text.find("1228"), std::string::npos) << valued.text;
  expect_no_held_out_size(valued.text, "a refused submission's value");
  const auto by_operator =
      send(daemon, "POST", "/api/v1/tasks/axpy/submissions", probing.dump(), k_operator);
  EXPECT_NE(by_operator.text.find("N=12288"), std::string::npos) << by_operator.text;
  EXPECT_EQ(send(daemon, "POST", "/api/v1/tasks/axpy/submissions", honest.dump()).status, 401);
  EXPECT_EQ(send(daemon, "POST", "/api/v1/tasks/nope/submissions", honest.dump(), k_agent).status,
            404);

  // An honest candidate; its event stream seen by an agent and by the operator.
  sse_reader agent_events(daemon.port());
  sse_reader operator_events(daemon.port(), k_operator);
  ASSERT_TRUE(agent_events.wait_ready());
  ASSERT_TRUE(operator_events.wait_ready());
  const auto submitted =
      send(daemon, "POST", "/api/v1/tasks/axpy/submissions", honest.dump(), k_agent);
  ASSERT_EQ(submitted.status, 201) << submitted.text;
  expect_no_held_out_size(submitted.text, "submission answer");
  EXPECT_EQ(submitted.body["task"], "axpy");
  EXPECT_EQ(submitted.body["labels"]["task"], "axpy");
  EXPECT_EQ(submitted.body["labels"]["gen"], "7");
  EXPECT_EQ(submitted.body["progress"]["total"], 3);  // 2 public + 1 held-out point
  const json& spec = submitted.body["spec"];
  EXPECT_EQ(spec["sweep"]["N"], json::array({4096, 8192}));
  EXPECT_EQ(spec["verify"]["trials"], 2);
  EXPECT_EQ(spec["cache"], false);
  EXPECT_TRUE(spec["seed"].is_number_integer());
  EXPECT_EQ(spec["kernel"]["reference"]["op"], "stream");
  const std::int64_t id = submitted.body["id"];
  const json job = daemon.wait_job(id);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  EXPECT_EQ(job["task"], "axpy");
  expect_no_held_out_size(job.dump(), "GET job");
  EXPECT_EQ(job["summary"]["fitness"]["points"], 3) << job.dump();

  // Held-out rows: scored like the others, shown without sizes, times or metrics.
  const std::string results = "/api/v1/jobs/" + std::to_string(id) + "/results";
  const auto rows = daemon.get(results);
  ASSERT_EQ(rows.status, 200);
  expect_no_held_out_size(rows.text, "results");
  ASSERT_EQ(rows.body["results"].size(), 3u);
  for (int i = 0; i < 2; ++i)
    EXPECT_TRUE(rows.body["results"][i].contains("params")) << rows.text;
  const json& held = rows.body["results"][2];
  EXPECT_EQ(
      held,
      (json{{"index", 2},
            {"held_out", true},
            {"status", "ok"},
            {"fitness", {{"correct", true}, {"combined_score", held["fitness"]["combined_score"]}}},
            {"flags", held["flags"]}}));
  EXPECT_TRUE(held["fitness"]["combined_score"].is_number());
  for (const std::string query :
       {"?format=jsonl", "?fields=params,time_us.median,metrics", "?format=json&offset=2"}) {
    const auto r = daemon.get(results + query);
    EXPECT_EQ(r.status, 200) << query;
    for (const auto& line : lines_of(r.text))
      expect_no_held_out_size(line, query);
  }
  const auto csv = daemon.get(results + "?format=csv");
  EXPECT_EQ(csv.text.find("\n12288,"), std::string::npos) << csv.text;
  EXPECT_NE(csv.text.find("\n4096,"), std::string::npos) << csv.text;
  // The operator sees everything.
  const auto full = send(daemon, "GET", results, "", k_operator);
  EXPECT_EQ(full.body["results"][2]["params"]["N"], k_held_n) << full.text;
  EXPECT_TRUE(full.body["results"][2].contains("time_us")) << full.text;
  const auto full_job = send(daemon, "GET", "/api/v1/jobs/" + std::to_string(id), "", k_operator);
  EXPECT_EQ(full_job.body["spec"]["held_out"]["N"], json::array({k_held_n})) << full_job.text;

  // Events: the agent's stream shows the job without held-out sizes, the operator's with.
  ASSERT_TRUE(eventually(
      [&] {
        return agent_events.has([](const sse_event& e) {
          return e.type == "job" && e.data.value("status", "") == "succeeded";
        });
      },
      10s));
  ASSERT_TRUE(eventually(
      [&] {
        return operator_events.has([](const sse_event& e) {
          return e.type == "job" && e.data.value("status", "") == "succeeded";
        });
      },
      10s));
  for (const auto& e : agent_events.events())
    expect_no_held_out_size(e.data.dump(), "event " + e.type);
  EXPECT_TRUE(operator_events.has([](const sse_event& e) {
    return e.type == "job" && e.data.contains("spec") && e.data["spec"].contains("held_out");
  }));

  // Jobs by task.
  ASSERT_EQ(send(daemon, "POST", "/api/v1/jobs",
                 R"({"kernel": {"op": "stream", "variant": "copy", "n": 4096}})", k_agent)
                .status,
            201);
  EXPECT_EQ(daemon.get("/api/v1/jobs?task=axpy").body["jobs"].size(), 1u);
  EXPECT_EQ(daemon.get("/api/v1/jobs?task=other").body["jobs"].size(), 0u);
  EXPECT_EQ(daemon.get("/api/v1/jobs").body["jobs"].size(), 2u);
  expect_no_held_out_size(daemon.get("/api/v1/jobs?task=axpy").text, "jobs list");

  // Retiring: the operator's; then no new submissions, and its jobs stay readable.
  EXPECT_EQ(send(daemon, "DELETE", "/api/v1/tasks/axpy", "", k_agent).status, 403);
  const auto retired = send(daemon, "DELETE", "/api/v1/tasks/axpy", "", k_operator);
  ASSERT_EQ(retired.status, 200) << retired.text;
  EXPECT_EQ(retired.body["status"], "retired");
  EXPECT_EQ(send(daemon, "DELETE", "/api/v1/tasks/axpy", "", k_operator).status, 409);
  const auto late = send(daemon, "POST", "/api/v1/tasks/axpy/submissions", honest.dump(), k_agent);
  EXPECT_EQ(late.status, 409) << late.text;
  EXPECT_EQ(late.body["error"]["type"], "task_retired");
  EXPECT_EQ(daemon.get("/api/v1/jobs/" + std::to_string(id)).status, 200);
  EXPECT_EQ(daemon.get("/api/v1/tasks/axpy").body["status"], "retired");
  EXPECT_EQ(send(daemon, "DELETE", "/api/v1/tasks/nope", "", k_operator).status, 404);
  EXPECT_EQ(send(daemon, "POST", "/api/v1/tasks", body, k_operator).status, 409);
}

// A task whose held-out scores are private: an agent sees its job's fitness over the public
// points alone and held-out rows without a score or flags, so no held-out time can be read back;
// the operator sees the whole score and the public part beside it.
TEST(TasksApi, PrivateHeldOutScoresAreTheOperatorsAlone) {
  daemon_process probe;
  daemon_process daemon({.extra_args = token_files(probe)});
  daemon.start();
  json task = axpy_task();
  task["held_out_scores"] = "private";
  // A target between the sizes' times: the points score apart.
  task["fitness"] = {{"target_us", 3}};
  ASSERT_EQ(send(daemon, "POST", "/api/v1/tasks", task.dump(), k_operator).status, 201);
  EXPECT_EQ(daemon.get("/api/v1/tasks/axpy").body["held_out_scores"], "private");
  json without = axpy_task("no_held_out");
  without.erase("held_out");
  without["held_out_scores"] = "private";
  const auto refused = send(daemon, "POST", "/api/v1/tasks", without.dump(), k_operator);
  EXPECT_EQ(refused.status, 422) << refused.text;
  EXPECT_EQ(refused.body["error"]["details"][0]["field"], "held_out_scores") << refused.text;

  sse_reader agent_events(daemon.port());
  ASSERT_TRUE(agent_events.wait_ready());
  const json honest = {{"source", k_hip_axpy}, {"entry", "axpy"}};
  const auto submitted =
      send(daemon, "POST", "/api/v1/tasks/axpy/submissions", honest.dump(), k_agent);
  ASSERT_EQ(submitted.status, 201) << submitted.text;
  EXPECT_EQ(submitted.body["spec"]["held_out_scores"], "private");
  const std::int64_t id = submitted.body["id"];
  const json job = daemon.wait_job(id);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  expect_no_held_out_size(job.dump(), "GET job");

  // What the agent sees: the public points' score, and held-out rows with a status only.
  const std::string results = "/api/v1/jobs/" + std::to_string(id) + "/results";
  const auto rows = daemon.get(results);
  ASSERT_EQ(rows.body["results"].size(), 3u) << rows.text;
  EXPECT_EQ(rows.body["results"][2], (json{{"index", 2}, {"held_out", true}, {"status", "ok"}}));
  const double a = rows.body["results"][0]["fitness"]["combined_score"];
  const double b = rows.body["results"][1]["fitness"]["combined_score"];
  const json& seen = job["summary"]["fitness"];
  EXPECT_EQ(seen["held_out"], "private") << seen.dump();
  EXPECT_EQ(seen["points"], 2) << seen.dump();
  EXPECT_FALSE(seen.contains("public")) << seen.dump();
  EXPECT_NEAR(seen["combined_score"].get<double>(), std::sqrt(a * b), 1e-9) << seen.dump();
  const auto jsonl = lines_of(daemon.get(results + "?format=jsonl").text);
  ASSERT_EQ(jsonl.size(), 3u);
  EXPECT_EQ(json::parse(jsonl[2]), rows.body["results"][2]) << jsonl[2];
  const auto csv = lines_of(daemon.get(results + "?format=csv").text);
  ASSERT_EQ(csv.size(), 4u);  // the header and three rows: the held-out one its index and status
  std::string held_cells = csv[3];
  std::erase(held_cells, ',');
  std::erase(held_cells, '\r');  // CSV lines end in CRLF
  EXPECT_EQ(held_cells, "2ok") << csv[3];
  const auto projected = daemon.get(results + "?fields=fitness,flags");
  EXPECT_EQ(projected.body["results"][2], json::object()) << projected.text;
  // The best point is a public one, though the held-out size does the most work per
  // microsecond: a best point named held out would say how it did there.
  const json& best = job["summary"]["best"];
  ASSERT_TRUE(best.is_object()) << job.dump();
  EXPECT_LT(best["index"].get<int>(), 2) << best.dump();
  EXPECT_FALSE(best.contains("held_out")) << best.dump();
  const auto listed = daemon.get("/api/v1/jobs?task=axpy");
  ASSERT_EQ(listed.body["jobs"].size(), 1u) << listed.text;
  EXPECT_EQ(listed.body["jobs"][0]["summary"]["fitness"], seen) << listed.text;
  EXPECT_EQ(listed.body["jobs"][0]["summary"]["best"], best) << listed.text;
  ASSERT_TRUE(eventually(
      [&] {
        return agent_events.has([](const sse_event& e) {
          return e.type == "job" && e.data.value("status", "") == "succeeded";
        });
      },
      10s));
  for (const auto& e : agent_events.events()) {
    if (e.type != "job" || e.data.value("status", "") != "succeeded") continue;
    EXPECT_EQ(e.data["summary"]["fitness"]["held_out"], "private") << e.data.dump();
    EXPECT_EQ(e.data["summary"]["fitness"]["points"], 2) << e.data.dump();
    EXPECT_EQ(e.data["summary"]["best"], best) << e.data.dump();
  }

  // What the operator sees: the held-out point's score counted, and the agent's part beside it.
  const auto full = send(daemon, "GET", "/api/v1/jobs/" + std::to_string(id), "", k_operator);
  const json& whole = full.body["summary"]["fitness"];
  EXPECT_EQ(whole["points"], 3) << whole.dump();
  EXPECT_EQ(whole["public"]["points"], 2) << whole.dump();
  EXPECT_EQ(whole["public"]["combined_score"], seen["combined_score"]) << whole.dump();
  const auto full_rows = send(daemon, "GET", results, "", k_operator);
  const double c = full_rows.body["results"][2]["fitness"]["combined_score"];
  EXPECT_NEAR(whole["combined_score"].get<double>(), std::cbrt(a * b * c), 1e-9) << whole.dump();
  EXPECT_NE(whole["combined_score"], seen["combined_score"]) << whole.dump();
}

// Where held-out scores are private, a held-out point is answered on the first rung of its
// ladder (point_budget.hpp: a second and twice max_time, 1.4 s here) however soon it was
// measured, so that when the job ends says nothing of the time the point took: a kernel whose
// time grew with its size would otherwise have the size read back from the job's end. With
// shown scores (whose held-out times the score says anyway) it is answered at once.
TEST(TasksApi, APrivateHeldOutPointIsAnsweredOnItsRung) {
  daemon_process probe;
  daemon_process daemon({.extra_args = token_files(probe)});
  daemon.start();
  for (const std::string scores : {"private", "shown"}) {
    SCOPED_TRACE(scores);
    json task = axpy_task("axpy_" + scores);
    task["held_out_scores"] = scores;
    task["timing"]["max_time_ms"] = 200;  // a mock point takes none of it
    ASSERT_EQ(send(daemon, "POST", "/api/v1/tasks", task.dump(), k_operator).status, 201);
    const json honest = {{"source", k_hip_axpy}, {"entry", "axpy"}};
    const auto submitted = send(daemon, "POST", "/api/v1/tasks/axpy_" + scores + "/submissions",
                                honest.dump(), k_agent);
    ASSERT_EQ(submitted.status, 201) << submitted.text;
    const std::string job_path = "/api/v1/jobs/" + std::to_string(submitted.body["id"].get<int>());
    // As the agent sees it: when the public points are done, and when the job ends.
    std::optional<std::chrono::steady_clock::time_point> publics_done;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    json job;
    for (;;) {
      job = daemon.get(job_path).body;
      const auto now = std::chrono::steady_clock::now();
      if (!publics_done && job["progress"]["done"].get<int>() >= 2) publics_done = now;
      if (job["finished_at"].is_string()) break;
      ASSERT_LT(now, deadline) << job.dump();
      std::this_thread::sleep_for(10ms);
    }
    ASSERT_EQ(job["status"], "succeeded") << job.dump();
    ASSERT_TRUE(publics_done);
    const double held_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - *publics_done).count();
    if (scores == "private") {
      // From when the agent saw the public points done, a little after the point began.
      EXPECT_GE(held_s, 1.0);
      EXPECT_LT(held_s, 2.5);  // the first rung, not the next (2.8 s)
    } else {
      EXPECT_LT(held_s, 0.9);
    }
  }
}

// With a watchdog budget too short for any rung (--point-timeout 0.1: 0.2 s a point, less its
// quarter-second margin), a private held-out point is held until its watchdog ends it: a
// `timeout`, whatever it took, and the worker replaced; the public points and the next job run.
TEST(TasksApi, APrivateHeldOutPointPastItsLastRungIsEndedByItsWatchdog) {
  daemon_process probe;
  std::vector<std::string> args = token_files(probe);
  args.insert(args.end(), {"--point-timeout", "0.1"});
  daemon_process daemon({.extra_args = args});
  daemon.start();
  json task = axpy_task();
  task["held_out_scores"] = "private";
  ASSERT_EQ(send(daemon, "POST", "/api/v1/tasks", task.dump(), k_operator).status, 201);
  const json honest = {{"source", k_hip_axpy}, {"entry", "axpy"}};
  for (int submission = 0; submission < 2; ++submission) {
    SCOPED_TRACE(submission);
    const auto submitted =
        send(daemon, "POST", "/api/v1/tasks/axpy/submissions", honest.dump(), k_agent);
    ASSERT_EQ(submitted.status, 201) << submitted.text;
    const std::int64_t id = submitted.body["id"];
    const json job = daemon.wait_job(id, 30s);
    ASSERT_TRUE(job["finished_at"].is_string()) << job.dump();
    const auto rows =
        send(daemon, "GET", "/api/v1/jobs/" + std::to_string(id) + "/results", "", k_operator);
    ASSERT_EQ(rows.body["results"].size(), 3u) << rows.text;
    EXPECT_EQ(rows.body["results"][0]["status"], "ok") << rows.text;
    EXPECT_EQ(rows.body["results"][1]["status"], "ok") << rows.text;
    EXPECT_EQ(rows.body["results"][2]["error"]["type"], "timeout") << rows.text;
  }
}

// A task with a bound takes that many submissions from each agent (each bearer token) in its
// window, says why it refuses the next and when to come back, and tells an agent what it has
// left; an operator is not held by it.
TEST(TasksApi, ATaskTakesAtMostItsBoundFromEachAgent) {
  const std::string second_token = "second-agent-token-for-task-tests";
  const httplib::Headers second = {{"Authorization", "Bearer " + second_token}};
  daemon_process probe;
  const std::vector<std::string> args = token_files(probe);
  std::ofstream(probe.data_dir() + "/tokens", std::ios::app) << second_token << "\n";
  daemon_process daemon({.extra_args = args});
  daemon.start();
  json task = axpy_task();
  task["submissions"] = {{"per_agent", 2}, {"window_hours", 1}};
  ASSERT_EQ(send(daemon, "POST", "/api/v1/tasks", task.dump(), k_operator).status, 201);
  const std::string candidate = json{{"source", k_hip_axpy}}.dump();
  const std::string path = "/api/v1/tasks/axpy/submissions";

  auto left = [&](const httplib::Headers& who) {
    return send(daemon, "GET", "/api/v1/tasks/axpy", "", who).body["submissions"];
  };
  EXPECT_EQ(left(k_agent),
            (json{{"per_agent", 2}, {"window_hours", 1}, {"used", 0}, {"remaining", 2}}));
  EXPECT_EQ(send(daemon, "POST", path, candidate, k_agent).status, 201);
  EXPECT_EQ(send(daemon, "POST", path, candidate, k_agent).status, 201);
  EXPECT_EQ(left(k_agent)["remaining"], 0);
  EXPECT_EQ(left(second)["remaining"], 2);
  const auto refused = send(daemon, "POST", path, candidate, k_agent);
  EXPECT_EQ(refused.status, 429) << refused.text;
  EXPECT_EQ(refused.body["error"]["type"], "submission_limit");
  EXPECT_EQ(refused.body["error"]["per_agent"], 2);
  const int retry = std::stoi(refused.header("Retry-After"));
  EXPECT_GT(retry, 3500);
  EXPECT_LE(retry, 3600);
  EXPECT_NE(refused.text.find("at most 2 submissions from each agent in 1 hour,"),
            std::string::npos)
      << refused.text;
  // Another agent, and the operator, are not held by what this one made.
  EXPECT_EQ(send(daemon, "POST", path, candidate, second).status, 201);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(send(daemon, "POST", path, candidate, k_operator).status, 201);
  EXPECT_EQ(daemon.get("/api/v1/jobs?task=axpy").body["jobs"].size(), 6u);
  // The task's listing shows the bound to anyone; an operator's view has no counts.
  EXPECT_EQ(left(k_operator), (json{{"per_agent", 2}, {"window_hours", 1}}));
}

// Deleting a job is an operator's: an agent cannot take back what it submitted (nor another
// agent's), and a task's deleted job still counts against its agent's bound.
TEST(TasksApi, OnlyAnOperatorDeletesJobsAndDeletedSubmissionsStayCounted) {
  daemon_process probe;
  daemon_process daemon({.extra_args = token_files(probe)});
  daemon.start();
  json task = axpy_task();
  task["submissions"] = {{"per_agent", 2}};
  ASSERT_EQ(send(daemon, "POST", "/api/v1/tasks", task.dump(), k_operator).status, 201);
  const std::string candidate = json{{"source", k_hip_axpy}}.dump();
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 2; ++i) {
    const auto r = send(daemon, "POST", "/api/v1/tasks/axpy/submissions", candidate, k_agent);
    ASSERT_EQ(r.status, 201) << r.text;
    ids.push_back(r.body["id"].get<std::int64_t>());
  }
  for (const auto id : ids)
    ASSERT_EQ(daemon.wait_job(id, 30s)["status"], "succeeded");
  const std::string path = "/api/v1/jobs/" + std::to_string(ids[0]);

  EXPECT_EQ(send(daemon, "DELETE", path).status, 401);
  const auto agent = send(daemon, "DELETE", path, "", k_agent);
  EXPECT_EQ(agent.status, 403) << agent.text;
  EXPECT_EQ(agent.body["error"]["type"], "forbidden") << agent.text;
  EXPECT_EQ(send(daemon, "GET", path, "", k_agent).status, 200);  // still there
  for (const auto id : ids) {
    EXPECT_EQ(send(daemon, "DELETE", "/api/v1/jobs/" + std::to_string(id), "", k_operator).status,
              204);
  }
  EXPECT_EQ(send(daemon, "GET", path, "", k_operator).status, 404);
  EXPECT_EQ(send(daemon, "GET", "/api/v1/tasks/axpy", "", k_agent).body["submissions"]["used"], 2);
  const auto refused = send(daemon, "POST", "/api/v1/tasks/axpy/submissions", candidate, k_agent);
  EXPECT_EQ(refused.status, 429) << refused.text;
  EXPECT_EQ(refused.body["error"]["type"], "submission_limit") << refused.text;
}

// On a daemon without tokens everyone may define tasks, and a task's bound holds each client
// address.
TEST(TasksApi, WithoutTokensATasksBoundHoldsEachAddress) {
  daemon_process daemon;
  daemon.start();
  sse_reader events(daemon.port());
  ASSERT_TRUE(events.wait_ready());
  json task = axpy_task();
  task["submissions"] = {{"per_agent", 1}};
  ASSERT_EQ(daemon.post_json("/api/v1/tasks", task).status, 201);
  const std::string candidate = json{{"source", k_hip_axpy}}.dump();
  const std::string path = "/api/v1/tasks/axpy/submissions";
  EXPECT_EQ(send(daemon, "POST", path, candidate).status, 201);
  const auto refused = send(daemon, "POST", path, candidate);
  EXPECT_EQ(refused.status, 429) << refused.text;
  EXPECT_EQ(refused.header("Retry-After"), "");  // a bound over the task's life
  EXPECT_NE(refused.text.find("this agent (address 127.0.0.1) has made 1"), std::string::npos)
      << refused.text;
  EXPECT_EQ(daemon.get("/api/v1/tasks/axpy").body["submissions"],
            (json{{"per_agent", 1}, {"used", 1}, {"remaining", 0}}));

  // Defining and retiring a task are events, which name it and its state.
  EXPECT_EQ(send(daemon, "DELETE", "/api/v1/tasks/axpy").status, 200);
  for (const char* status : {"active", "retired"}) {
    EXPECT_TRUE(eventually(
        [&] {
          return events.has([&](const sse_event& e) {
            return e.type == "task" && e.data == json{{"name", "axpy"}, {"status", status}};
          });
        },
        10s))
        << status;
  }
}

TEST(TasksApi, BadTaskDefinitionsAreRefusedNamingTheField) {
  daemon_process daemon;
  daemon.start();
  auto refused = [&](const std::function<void(json&)>& change, const std::string& field) {
    json t = axpy_task();
    change(t);
    const auto r = daemon.post_json("/api/v1/tasks", t);
    EXPECT_EQ(r.status, 422) << field << ": " << r.text;
    bool named = false;
    for (const auto& d : r.body["error"]["details"])
      named |= d["field"] == field;
    EXPECT_TRUE(named) << field << ": " << r.text;
  };
  refused([](json& t) { t["verify"]["trials"] = 1; }, "verify.trials");
  refused([](json& t) { t["verify"]["trials"] = 0; }, "verify.trials");
  refused([](json& t) { t["verify"]["atol"] = 1e30; }, "verify.atol");
  refused([](json& t) { t["verify"]["rtol"] = 0.5; }, "verify.rtol");
  refused([](json& t) { t["kernel"].erase("reference"); }, "kernel.reference");
  refused([](json& t) { t["kernel"]["source"] = k_hip_axpy; }, "kernel.source");
  refused([](json& t) { t["kernel"]["args"][2]["count"] = "N*Q"; }, "kernel.args[2].count");
  refused([](json& t) { t["kernel"]["op"] = "gemm"; }, "kernel.op");
  refused([](json& t) { t["name"] = "no spaces"; }, "name");
  refused([](json& t) { t.erase("name"); }, "name");
  refused([](json& t) { t["seed"] = 1; }, "seed");
  refused([](json& t) { t["held_out"] = {{"M", {8}}}; }, "held_out.M");
  refused([](json& t) { t["held_out"] = {{"N", {-1}}}; }, "kernel.args[0].count");
  // A task no live device can run (this daemon has mock devices only).
  refused([](json& t) { t["engine"] = "hip"; }, "engine");
  refused([](json& t) { t["kernel"]["language"] = "cuda"; }, "kernel.language");
  EXPECT_EQ(daemon.get("/api/v1/tasks").body["tasks"].size(), 0u);
  // A plain job has no held-out points.
  const auto plain = daemon.post_json(
      "/api/v1/jobs", json::parse(R"({"kernel": {"op": "stream", "variant": "copy", "n": "N"},
                                      "sweep": {"N": [4096]}, "held_out": {"N": [8192]}})"));
  EXPECT_EQ(plain.status, 422) << plain.text;
  EXPECT_EQ(plain.body["error"]["details"][0]["field"], "held_out") << plain.text;

  // Without operator tokens, whoever may write is an operator (local use): held-out sizes show.
  ASSERT_EQ(daemon.post_json("/api/v1/tasks", axpy_task()).status, 201);
  EXPECT_EQ(daemon.get("/api/v1/tasks/axpy").body["held_out"]["N"], json::array({k_held_n}));
}

TEST(TasksApi, OperatorTokensComeFromTheConfigFileToo) {
  daemon_process probe;
  const std::string operators = probe.data_dir() + "/operator-tokens";
  std::ofstream(operators) << k_operator_token << "\n";
  const std::string config = probe.data_dir() + "/kernelscan.toml";
  std::ofstream(config) << "[serve]\noperator-token-file = \"" << operators << "\"\n";
  daemon_process daemon({.extra_args = {"--config", config}});
  daemon.start();
  const std::string body = axpy_task().dump();
  EXPECT_EQ(send(daemon, "POST", "/api/v1/tasks", body).status, 401);
  EXPECT_EQ(send(daemon, "POST", "/api/v1/tasks", body, k_operator).status, 201);
  // The operator token is a write token too; without it, a write is refused.
  EXPECT_EQ(send(daemon, "POST", "/api/v1/tasks/axpy/submissions",
                 json{{"source", k_hip_axpy}}.dump(), k_operator)
                .status,
            201);
  EXPECT_EQ(
      send(daemon, "POST", "/api/v1/tasks/axpy/submissions", json{{"source", k_hip_axpy}}.dump())
          .status,
      401);
}

// An honest OpenCL matmul, verified for real (PoCL) at its public and held-out sizes.
constexpr const char* k_naive_matmul = R"cl(
__kernel void mm(__global float* c, __global const float* a, __global const float* b, int n) {
  const int row = get_global_id(1), col = get_global_id(0);
  if (row >= n || col >= n) return;
  float sum = 0;
  for (int k = 0; k < n; ++k) sum += a[row * n + k] * b[k * n + col];
  c[row * n + col] = sum;
}
)cl";

TEST(TasksOpenCL, AnHonestKernelIsVerifiedAtItsHeldOutSizesToo) {
  daemon_process::options o;
  o.engine = "opencl";
  daemon_process daemon(o);
  try {
    daemon.start();
  } catch (const std::exception& e) {
    if (device_required("KERNELSCAN_REQUIRE_OPENCL")) throw;
    GTEST_SKIP() << "no OpenCL device: " << e.what();
  }
  const json task = parse_json(R"js({
    "name": "matmul", "engine": "opencl",
    "kernel": {"language": "opencl", "block": [8, 8, 1], "grid": ["ceil(N/8)", "ceil(N/8)", 1],
      "args": [{"name": "c", "type": "f32*", "count": "N*N", "output": true},
               {"name": "a", "type": "f32*", "count": "N*N"},
               {"name": "b", "type": "f32*", "count": "N*N"},
               {"name": "n", "type": "i32", "value": "N"}],
      "flops": "2*N*N*N", "bytes": "12*N*N",
      "reference": {"op": "gemm", "m": "N", "n": "N", "k": "N", "dtype": "f32",
                    "a": "a", "b": "b", "c": "c"}},
    "sweep": {"N": [64]},
    "held_out": {"N": [72]},
    "verify": {"trials": 2},
    "timing": {"l2": "hot", "min_samples": 10, "max_time_ms": 300, "target_rel_noise": 0.02}
  })js");
  ASSERT_EQ(daemon.post_json("/api/v1/tasks", task).status, 201);
  const auto submitted = daemon.post_json("/api/v1/tasks/matmul/submissions",
                                          {{"source", k_naive_matmul}, {"entry", "mm"}});
  ASSERT_EQ(submitted.status, 201) << submitted.text;
  const json job = daemon.wait_job(submitted.body["id"], 180s);
  ASSERT_EQ(job["status"], "succeeded") << job.dump() << "\n" << daemon.log();
  EXPECT_TRUE(job["summary"]["fitness"]["correct"].get<bool>()) << job.dump();
  const auto rows = daemon.get("/api/v1/jobs/" + job["id"].dump() + "/results").body["results"];
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["verification"]["status"], "passed");  // no tokens: a local operator sees all
    EXPECT_TRUE(row["fitness"]["correct"].get<bool>());
  }
  EXPECT_EQ(rows[1]["params"]["N"], 72);
}

}  // namespace
}  // namespace kernelscan::testing

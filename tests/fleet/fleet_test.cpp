// A fleet (DESIGN.md §7): real daemons with mock devices sharing one real PostgreSQL database.
// Each test takes a database of its own on the test server (a ctest fixture, or one this
// process starts); the test that stops PostgreSQL starts a server of its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "storage/detail/pg_connection.hpp"
#include "storage/postgres_job_store.hpp"
#include "tests/support/daemon_process.hpp"
#include "tests/support/import_samples.hpp"
#include "tests/support/postgres_server.hpp"
#include "tests/support/sse_reader.hpp"

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;

// Daemons named a, b, c, ... on one database, each with `devices` mock devices.
class fleet {
 public:
  fleet(int nodes, int devices, std::vector<std::string> extra = {}, std::string database = "")
      : m_database(database.empty() ? create_database() : database),
        m_own_database(database.empty()) {
    for (int i = 0; i < nodes; ++i) {
      std::vector<std::string> args{"--node", std::string(1, char('a' + i)), "--lease-timeout",
                                    "3"};
      args.insert(args.end(), extra.begin(), extra.end());
      m_nodes.push_back(std::make_unique<daemon_process>(daemon_process::options{
          .mock_devices = devices, .extra_args = args, .database = m_database}));
    }
    for (auto& n : m_nodes)
      n->start();
  }
  ~fleet() {
    m_nodes.clear();
    if (m_own_database) drop_database(m_database);
  }
  daemon_process& operator[](std::size_t i) { return *m_nodes.at(i); }
  daemon_process& node(const std::string& name) { return *m_nodes.at(std::size_t(name[0] - 'a')); }
  std::size_t size() const { return m_nodes.size(); }
  const std::string& database() const { return m_database; }

 private:
  std::string m_database;
  bool m_own_database;
  std::vector<std::unique_ptr<daemon_process>> m_nodes;
};

json results_of(const daemon_process& d, std::int64_t id) {
  const auto r = d.get("/api/v1/jobs/" + std::to_string(id) + "/results");
  return r.status == 200 ? r.body["results"] : json::array();
}

// Every point of the job stored exactly once, in index order, and ok.
::testing::AssertionResult every_point_once(const daemon_process& d, std::int64_t id,
                                            std::size_t total) {
  const json rows = results_of(d, id);
  if (rows.size() != total) {
    return ::testing::AssertionFailure()
           << "job " << id << " has " << rows.size() << " rows, not " << total;
  }
  for (std::size_t i = 0; i < total; ++i) {
    if (rows[i]["index"] != i)
      return ::testing::AssertionFailure() << "row " << i << " is index " << rows[i]["index"];
    if (rows[i]["status"] != "ok")
      return ::testing::AssertionFailure() << "point " << i << ": " << rows[i].dump();
  }
  return ::testing::AssertionSuccess();
}

TEST(Fleet, TwoHundredJobsRoundRobinEverywhereAllSucceedWithEveryPointStoredOnce) {
  // 67 submissions to each node as fast as they go: over the per-address burst of the default
  // rate limit (60) wherever they come faster than it refills, which is not what this measures.
  fleet f(3, 4, {"--rate-limit", "0"});
  constexpr int jobs = 200;
  std::vector<std::int64_t> ids;
  for (int i = 0; i < jobs; ++i) {
    json spec = stream_sweep(3, 20, 4096 * (i + 1));
    spec["name"] = "job " + std::to_string(i);
    ids.push_back(f[std::size_t(i) % f.size()].submit(spec));
  }
  std::set<std::pair<std::string, int>> devices_used;
  std::map<std::string, int> per_node;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    // Any node's API serves every job.
    const json job = f[(i + 1) % f.size()].wait_job(ids[i], 120s);
    ASSERT_EQ(job["status"], "succeeded") << job.dump();
    EXPECT_EQ(job["progress"]["done"], 3);
    EXPECT_TRUE(every_point_once(f[i % f.size()], ids[i], 3));
    devices_used.emplace(job["node"].get<std::string>(), job["device"].get<int>());
    ++per_node[job["node"].get<std::string>()];
  }
  EXPECT_EQ(devices_used.size(), 12u) << "every device of every node ran jobs";
  for (const auto& [node, n] : per_node)
    std::cout << "node " << node << " ran " << n << " jobs\n";
  // Ids are the fleet's: 200 different ones.
  EXPECT_EQ(std::set<std::int64_t>(ids.begin(), ids.end()).size(), std::size_t(jobs));
}

TEST(Fleet, AJobOfANodeKilledMidwayFinishesOnAnotherWithEveryPoint) {
  fleet f(3, 1);
  const auto id = f[0].submit(stream_sweep(16, 150));
  std::string victim;
  ASSERT_TRUE(eventually(
      [&] {
        const json job = f[0].get("/api/v1/jobs/" + std::to_string(id)).body;
        if (job["status"] != "running" || job["progress"]["done"] < 3) return false;
        victim = job["node"].get<std::string>();
        return true;
      },
      20s));
  f.node(victim).kill9();
  daemon_process& other = f.node(victim == "a" ? "b" : "a");
  const json job = other.wait_job(id, 60s);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  EXPECT_NE(job["node"], victim);
  EXPECT_EQ(job["progress"]["done"], 16);
  EXPECT_EQ(job["progress"]["ok"], 16);
  EXPECT_TRUE(every_point_once(other, id, 16));
  // Whichever node noticed first put it back in the queue.
  std::string logs;
  for (std::size_t i = 0; i < f.size(); ++i)
    logs += f[i].log();
  EXPECT_NE(logs.find("its node stopped renewing its lease; it is queued again"),
            std::string::npos);
}

TEST(Fleet, PostgresqlStoppedAndStartedAgainMidSweepTheSweepCompletes) {
  postgres_server server;
  const std::string url = create_database(server.url());
  auto f = std::make_unique<fleet>(2, 1, std::vector<std::string>{}, url);
  const auto id = (*f)[0].submit(stream_sweep(30, 100));
  ASSERT_TRUE(eventually(
      [&] {
        return (*f)[0].get("/api/v1/jobs/" + std::to_string(id)).body["progress"]["done"] >= 5;
      },
      20s));
  server.stop();
  // Submissions cannot be stored: 503, and the daemons stay up.
  const auto refused = (*f)[1].post_json("/api/v1/jobs", stream_sweep(2, 0));
  EXPECT_EQ(refused.status, 503) << refused.text;
  EXPECT_EQ(refused.body["error"]["type"], "storage_unavailable") << refused.text;
  EXPECT_EQ((*f)[0].get("/healthz").status, 200);
  EXPECT_EQ((*f)[1].get("/healthz").status, 200);
  std::this_thread::sleep_for(2s);  // points are measured meanwhile, held in memory
  server.start();
  const json job = (*f)[1].wait_job(id, 90s);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  EXPECT_EQ(job["progress"]["done"], 30);
  EXPECT_TRUE(every_point_once((*f)[0], id, 30));
  // They reconnected by themselves: new work runs.
  EXPECT_EQ((*f)[1].wait_job((*f)[1].submit(stream_sweep(2, 0)))["status"], "succeeded");
  const std::string logs = (*f)[0].log() + (*f)[1].log();
  EXPECT_NE(logs.find("storage recovered"), std::string::npos);
  f.reset();
}

// A node cut off from PostgreSQL for longer than its lease holds the points it measured in
// memory; another node puts its job back in the queue, and the job (placed on that node) comes
// back to it. It resumes after the points it held: none is measured twice, and the progress
// counts each point once.
TEST(Fleet, ANodeThatTakesBackItsJobAfterAnOutageResumesAfterThePointsItHeld) {
  postgres_server server;
  const std::string url = create_database(server.url());
  auto f = std::make_unique<fleet>(2, 1, std::vector<std::string>{}, url);
  daemon_process& a = (*f)[0];
  daemon_process& b = (*f)[1];
  constexpr int total = 40;
  json spec = stream_sweep(total, 100);
  spec["device"] = {{"node", "a"}};
  const auto id = b.submit(spec);
  const std::string path = "/api/v1/jobs/" + std::to_string(id);
  ASSERT_TRUE(eventually([&] { return b.get(path).body["progress"]["done"] >= 3; }, 20s));
  server.stop();
  std::this_thread::sleep_for(1s);  // a measures on for half its lease, holding the points
  ASSERT_EQ(::kill(a.pid(), SIGSTOP), 0);
  server.start();
  // b finds a's lease run out and queues the job again; only a may run it.
  const bool requeued = eventually([&] { return b.get(path).body["status"] == "queued"; }, 20s);
  ASSERT_EQ(::kill(a.pid(), SIGCONT), 0);
  ASSERT_TRUE(requeued) << b.get(path).text;
  const json job = b.wait_job(id, 60s);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  EXPECT_EQ(job["node"], "a");
  EXPECT_EQ(job["progress"]["done"], total);
  EXPECT_EQ(job["progress"]["ok"], total);
  EXPECT_TRUE(every_point_once(b, id, total));
  EXPECT_EQ(a.get("/api/v1/devices/0").body["points_measured"], total) << a.log();
  f.reset();
}

// While PostgreSQL is away every route that needs it answers 503 storage_unavailable with
// Retry-After (never a 404 that reads as "no such job or node", never a 500); the ones that do
// not need it keep answering; once it is back, every route answers as before.
TEST(Fleet, WhilePostgresqlIsAwayEveryRouteThatNeedsItAnswers503AndAllAnswerOnceItIsBack) {
  postgres_server server;
  const std::string url = create_database(server.url());
  auto f = std::make_unique<fleet>(2, 1, std::vector<std::string>{}, url);
  daemon_process& a = (*f)[0];
  const auto id = a.submit(stream_sweep(2, 0));
  ASSERT_EQ(a.wait_job(id)["status"], "succeeded");
  ASSERT_TRUE(eventually([&] { return a.get("/api/v1/devices/0?node=b").status == 200; }));
  const std::string job = "/api/v1/jobs/" + std::to_string(id);
  const json import_body = {{"format", "rocm_profiler"}, {"data", seed_results()}};
  struct call {
    std::string method, path, body;
    int normally;  // the status once PostgreSQL is back
  };
  const std::vector<call> calls{
      {"GET", "/api/v1/jobs", "", 200},
      {"GET", "/api/v1/jobs?status=running&label.team=perf", "", 200},
      {"GET", job, "", 200},
      {"GET", job + "?wait=1", "", 200},
      {"GET", job + "/results", "", 200},
      {"GET", job + "/results?format=csv", "", 200},
      {"GET", job + "/results?format=jsonl&offset=1", "", 200},
      {"POST", job + "/cancel", "", 409},
      {"GET", "/api/v1/devices", "", 200},
      {"GET", "/api/v1/devices/0?node=b", "", 200},
      {"POST", "/api/v1/devices/0/roofline?node=b", "{}", 202},
      {"POST", "/api/v1/jobs", stream_sweep(2, 0).dump(), 201},
      {"POST", "/api/v1/imports", import_body.dump(), 201},
      {"GET", "/readyz", "", 200},
  };
  auto send = [&](const call& c) {
    return c.method == "GET" ? a.get(c.path) : a.post(c.path, c.body);
  };
  sse_reader events(a.port());
  ASSERT_TRUE(
      eventually([&] { return events.has([](const sse_event& e) { return e.type == "ready"; }); }));

  server.stop();
  for (const auto& c : calls) {
    const auto r = send(c);
    EXPECT_EQ(r.status, 503) << c.method << " " << c.path << ": " << r.text;
    EXPECT_EQ(r.body["error"]["type"], "storage_unavailable") << c.method << " " << c.path;
    EXPECT_EQ(r.header("Retry-After"), "5") << c.method << " " << c.path;
  }
  // What needs no database still answers: liveness, this node's own devices, the metrics
  // (which say the store is down, and how many points wait for it).
  EXPECT_EQ(a.get("/healthz").status, 200);
  const auto own = a.get("/api/v1/devices/0");
  EXPECT_EQ(own.status, 200) << own.text;
  EXPECT_EQ(own.body["node"], "a");
  const auto metrics = a.get("/metrics");
  EXPECT_EQ(metrics.status, 200) << metrics.text;
  EXPECT_NE(metrics.text.find("\nkernelscan_storage_up 0\n"), std::string::npos) << metrics.text;
  EXPECT_NE(metrics.text.find("\nkernelscan_points_unstored 0\n"), std::string::npos);
  EXPECT_EQ(metrics.text.find("kernelscan_queue_depth"), std::string::npos)
      << "no job figures while the store cannot be read";
  // The event stream needs no database either.
  sse_reader during(a.port());
  EXPECT_TRUE(
      eventually([&] { return during.has([](const sse_event& e) { return e.type == "ready"; }); }));

  server.start();
  for (const auto& c : calls) {
    http_reply r;
    EXPECT_TRUE(eventually(
        [&] {
          r = send(c);
          return r.status == c.normally;
        },
        20s))
        << c.method << " " << c.path << " answers " << r.status << ": " << r.text;
  }
  EXPECT_NE(a.get("/metrics").text.find("\nkernelscan_storage_up 1\n"), std::string::npos);
  // b's events of the outage never reached a: its streams are told to reload.
  EXPECT_TRUE(eventually(
      [&] { return events.has([](const sse_event& e) { return e.type == "reset"; }); }, 10s));
  const auto rows = a.get(job + "/results");
  EXPECT_EQ(rows.body["results"].size(), 2u) << rows.text;
  f.reset();
}

TEST(Fleet, AnEventsStreamOnOneNodeShowsTheLivePointsOfAJobAnotherNodeRuns) {
  fleet f(3, 1);
  sse_reader events(f[0].port());
  ASSERT_TRUE(
      eventually([&] { return events.has([](const sse_event& e) { return e.type == "ready"; }); }));
  json spec = stream_sweep(6, 50);
  spec["device"] = {{"node", "c"}};
  const auto id = f[1].submit(spec);  // submitted to b, run by c, watched on a
  const json job = f[2].wait_job(id, 60s);
  ASSERT_EQ(job["status"], "succeeded");
  EXPECT_EQ(job["node"], "c");
  ASSERT_TRUE(eventually(
      [&] {
        return events.has([&](const sse_event& e) {
          return e.type == "job" && e.data["id"] == id && e.data["status"] == "succeeded";
        });
      },
      10s));
  std::uint64_t points = 0;
  for (const auto& e : events.events()) {
    if (e.type == "points" && e.data["job_id"] == id)
      points += e.data["stored"].get<std::uint64_t>();
  }
  EXPECT_EQ(points, 6u);
  EXPECT_TRUE(events.has([&](const sse_event& e) {
    return e.type == "job" && e.data["id"] == id && e.data["status"] == "running" &&
           e.data["node"] == "c";
  }));
}

// Another node's devices are as fresh as their changes, not as its heartbeats: with a heartbeat
// every 30 s (a lease of 120 s), a job claimed on c shows c's device busy with it on a's device
// list by the time a's event stream says the job runs, and idle again when it ends.
TEST(Fleet, AnotherNodesDeviceShowsBusyAndIdleAtOnceNotAtItsNextHeartbeat) {
  const std::string db = create_database();
  std::vector<std::unique_ptr<daemon_process>> nodes;
  for (const char* name : {"a", "c"}) {
    nodes.push_back(std::make_unique<daemon_process>(
        daemon_process::options{.mock_devices = 1,
                                .extra_args = {"--node", name, "--lease-timeout", "120"},
                                .database = db}));
    nodes.back()->start();
  }
  daemon_process& a = *nodes[0];
  auto c_device = [&] {
    const json devices = a.get("/api/v1/devices").body["devices"];
    for (const auto& d : devices) {
      if (d["node"] == "c") return d;
    }
    return json();
  };
  // Its worker got ready after the heartbeat at its start: idle already, not `starting`.
  ASSERT_TRUE(eventually([&] { return c_device()["state"] == "idle"; }, 3s)) << c_device().dump();

  sse_reader events(a.port());
  ASSERT_TRUE(
      eventually([&] { return events.has([](const sse_event& e) { return e.type == "ready"; }); }));
  json spec = stream_sweep(30, 100);  // 3 s on c
  spec["device"] = {{"node", "c"}};
  const auto submitted = std::chrono::steady_clock::now();
  const auto id = a.submit(spec);
  ASSERT_TRUE(eventually(
      [&] {
        return events.has([&](const sse_event& e) {
          return e.type == "job" && e.data["id"] == id && e.data["status"] == "running";
        });
      },
      3s));
  const json busy = c_device();
  EXPECT_EQ(busy["state"], "busy") << busy.dump();
  EXPECT_EQ(busy["current_job"], id) << busy.dump();
  std::cout << "c's device read busy on a "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted).count()
            << " s after the submission (heartbeat every 30 s)\n";

  const json job = a.wait_job(id, 60s);
  ASSERT_EQ(job["status"], "succeeded") << job.dump();
  EXPECT_EQ(job["node"], "c");
  // c stores the job's end, then its device's: a reader may fall between the two.
  json idle;
  EXPECT_TRUE(eventually(
      [&] {
        idle = c_device();
        return idle["state"] == "idle" && idle["current_job"].is_null();
      },
      2s))
      << idle.dump();
  // The same through the device route.
  EXPECT_EQ(a.get("/api/v1/devices/0?node=c").body["state"], "idle");
  nodes.clear();
  drop_database(db);
}

TEST(Fleet, PlacementByNodeAndIndexByNodeOrByModel) {
  const std::string db = create_database();
  {
    daemon_process a({.mock_devices = 2, .extra_args = {"--node", "a"}, .database = db});
    daemon_process b({.mock_devices = 2,
                      .extra_args = {"--node", "b", "--mock-model", "H100-SXM"},
                      .database = db});
    a.start();
    b.start();
    json spec = stream_sweep(2, 0);
    spec["device"] = {{"model", "H100-SXM"}};
    json job = a.wait_job(a.submit(spec));
    EXPECT_EQ(job["node"], "b");
    EXPECT_EQ(job["requested_device"], json({{"model", "H100-SXM"}}));
    spec["device"] = {{"node", "a"}, {"index", 1}};
    job = b.wait_job(b.submit(spec));
    EXPECT_EQ(job["node"], "a");
    EXPECT_EQ(job["device"], 1);
    spec["device"] = {{"node", "b"}};
    EXPECT_EQ(a.wait_job(a.submit(spec))["node"], "b");

    spec["device"] = {{"model", "MI250X"}};
    auto r = a.post_json("/api/v1/jobs", spec);
    EXPECT_EQ(r.status, 422) << r.text;
    EXPECT_EQ(r.body["error"]["details"][0]["field"], "device.model") << r.text;
    EXPECT_NE(r.text.find("H100-SXM"), std::string::npos) << r.text;
    spec["device"] = {{"node", "zz"}};
    r = a.post_json("/api/v1/jobs", spec);
    EXPECT_EQ(r.status, 422) << r.text;
    EXPECT_EQ(r.body["error"]["details"][0]["field"], "device.node") << r.text;
    spec["device"] = {{"node", "b"}, {"index", 5}};
    EXPECT_EQ(a.post_json("/api/v1/jobs", spec).status, 422);
  }
  drop_database(db);
}

TEST(Fleet, CancelOnOneNodeStopsTheJobOnTheNodeThatRunsIt) {
  fleet f(2, 1);
  json spec = stream_sweep(40, 100);
  spec["device"] = {{"node", "b"}};
  const auto id = f[0].submit(spec);
  ASSERT_TRUE(eventually(
      [&] { return f[0].get("/api/v1/jobs/" + std::to_string(id)).body["progress"]["done"] >= 2; },
      20s));
  const auto r = f[0].post("/api/v1/jobs/" + std::to_string(id) + "/cancel", "");
  EXPECT_EQ(r.status, 200) << r.text;
  const json job = f[0].wait_job(id, 20s);
  EXPECT_EQ(job["status"], "cancelled") << job.dump();
  EXPECT_LT(job["progress"]["done"], 40);
}

TEST(Fleet, AJobDeletedOnOneNodeIsGoneFromEveryNodeAndItsStreams) {
  fleet f(2, 1);
  sse_reader on_b(f[1].port());
  ASSERT_TRUE(on_b.wait_ready());
  json spec = stream_sweep(3, 1);
  spec["device"] = {{"node", "b"}};
  const auto id = f[0].submit(spec);
  ASSERT_EQ(f[0].wait_job(id, 20s)["status"], "succeeded");
  const std::string path = "/api/v1/jobs/" + std::to_string(id);
  const auto r = f[0].del(path);
  EXPECT_EQ(r.status, 204) << r.text;
  EXPECT_EQ(f[1].get(path).status, 404);
  EXPECT_EQ(f[1].get(path + "/results").status, 404);
  EXPECT_TRUE(eventually(
      [&] {
        return on_b.has([&](const sse_event& e) {
          return e.type == "job_deleted" && e.data == json{{"job_id", id}};
        });
      },
      10s));
  EXPECT_EQ(f[1].del(path).status, 404);  // once
}

TEST(Fleet, DevicesOfEveryNodeAndNodeNamesAreUnique) {
  fleet f(2, 2);
  const json devices = f[0].get("/api/v1/devices").body["devices"];
  ASSERT_EQ(devices.size(), 4u) << devices.dump();
  std::set<std::pair<std::string, int>> seen;
  for (const auto& d : devices) {
    seen.emplace(d["node"].get<std::string>(), d["index"].get<int>());
    EXPECT_TRUE(d["last_heartbeat_at"].is_string());
    EXPECT_EQ(d["model"], "MI300X");
  }
  EXPECT_EQ(seen, (std::set<std::pair<std::string, int>>{{"a", 0}, {"a", 1}, {"b", 0}, {"b", 1}}));

  // A second live "a" is refused at start-up.
  daemon_process twin({.mock_devices = 1, .extra_args = {"--node", "a"}, .database = f.database()});
  EXPECT_THROW(twin.start(), std::runtime_error);
  EXPECT_NE(twin.log().find("another live daemon is node \"a\""), std::string::npos) << twin.log();

  // A node that stopped shows its devices offline; restarted under its name, it serves again.
  EXPECT_EQ(f[1].terminate(), 0);
  const json after = f[0].get("/api/v1/devices").body["devices"];
  ASSERT_EQ(after.size(), 4u);
  for (const auto& d : after) {
    EXPECT_EQ(d["state"] == "offline", d["node"] == "b") << d.dump();
  }
  f[1].start();
  EXPECT_EQ(f[1].wait_job(f[1].submit(stream_sweep(2, 0)))["status"], "succeeded");
}

TEST(Fleet, DeviceRoutesServeAndMeasureAnotherNodesDevice) {
  fleet f(2, 2);
  // b's device 1, read on a, from the fleet's device table.
  auto r = f[0].get("/api/v1/devices/1?node=b");
  ASSERT_EQ(r.status, 200) << r.text;
  EXPECT_EQ(r.body["node"], "b");
  EXPECT_EQ(r.body["index"], 1);
  EXPECT_TRUE(r.body["last_heartbeat_at"].is_string());
  EXPECT_EQ(f[0].get("/api/v1/devices/1").body["node"], "a") << "no node: the answering one's";

  r = f[0].get("/api/v1/devices/2?node=b");
  EXPECT_EQ(r.status, 404) << r.text;
  EXPECT_EQ(r.body["error"]["details"][0]["field"], "index") << r.text;
  EXPECT_NE(r.text.find(R"(no device 2 on node \"b\" (its devices: 0, 1))"), std::string::npos)
      << r.text;
  r = f[0].get("/api/v1/devices/0?node=zz");
  EXPECT_EQ(r.status, 404) << r.text;
  EXPECT_EQ(r.body["error"]["details"][0]["field"], "node") << r.text;
  EXPECT_NE(r.text.find("(nodes: a, b)"), std::string::npos) << r.text;

  // A roofline asked of a reaches b, which measures it again.
  json before;
  ASSERT_TRUE(eventually(
      [&] {
        before = f[1].get("/api/v1/devices/0").body;
        return before["state"] == "idle" && before["measured"].is_object();
      },
      20s));
  sse_reader events(f[0].port());
  ASSERT_TRUE(events.wait_ready());
  const auto asked = f[0].post("/api/v1/devices/0/roofline?node=b", "{}");
  ASSERT_EQ(asked.status, 202) << asked.text;
  EXPECT_EQ(asked.body["node"], "b");
  EXPECT_EQ(asked.body["roofline_requested"], true);
  ASSERT_TRUE(eventually(
      [&] {
        return f[1].get("/api/v1/devices/0").body["measured"]["measured_at"] !=
               before["measured"]["measured_at"];
      },
      20s))
      << f[1].log();
  EXPECT_NE(f[1].log().find("device 0: its roofline will be measured again, as another node asked"),
            std::string::npos);
  // a's event stream says so, and a reads the device as b's event has it: b stores its
  // devices before the event goes out.
  json event;
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& e : events.events()) {
          if (e.type == "device" && e.data["node"] == "b" && e.data["index"] == 0 &&
              e.data["state"] == "idle" &&
              e.data["measured_at"] != before["measured"]["measured_at"]) {
            event = e.data;
            return true;
          }
        }
        return false;
      },
      10s));
  EXPECT_TRUE(events.has([](const sse_event& e) {
    return e.type == "device" && e.data["node"] == "b" && e.data["state"] == "measuring";
  }));
  EXPECT_EQ(f[0].get("/api/v1/devices/0?node=b").body["measured"]["measured_at"],
            event["measured_at"]);
  // b's device 1 and a's own were not measured again.
  EXPECT_EQ(f[1].log().find("device 1: its roofline will be measured again"), std::string::npos);

  // A node that stopped cannot measure: a clear 409 naming it.
  EXPECT_EQ(f[1].terminate(), 0);
  r = f[0].post("/api/v1/devices/0/roofline?node=b", "{}");
  EXPECT_EQ(r.status, 409) << r.text;
  EXPECT_EQ(r.body["error"]["type"], "node_offline") << r.text;
  EXPECT_NE(r.text.find(R"(node \"b\" is offline)"), std::string::npos) << r.text;
  EXPECT_EQ(f[0].get("/api/v1/devices/0?node=b").body["state"], "offline");
  // a's event stream says so: b's two devices offline, once each.
  auto offline = [&](int index) {
    const auto all = events.events();
    return std::count_if(all.begin(), all.end(), [&](const sse_event& e) {
      return e.type == "device" && e.data["node"] == "b" && e.data["index"] == index &&
             e.data["state"] == "offline";
    });
  };
  EXPECT_TRUE(eventually([&] { return offline(0) >= 1 && offline(1) >= 1; }, 10s));
  std::this_thread::sleep_for(2s);  // a few more of a's heartbeats
  EXPECT_EQ(offline(0), 1);
  EXPECT_EQ(offline(1), 1);
}

// A node that dies says nothing: every other node sees its lease run out at its own heartbeat
// and tells its own event streams that the node's devices are offline.
TEST(Fleet, ANodeThatDiesShowsOfflineOnTheOtherNodesEventStreams) {
  fleet f(3, 1);
  sse_reader on_a(f[0].port()), on_c(f[2].port());
  ASSERT_TRUE(on_a.wait_ready());
  ASSERT_TRUE(on_c.wait_ready());
  // b's device as the others know it before: not offline.
  ASSERT_TRUE(
      eventually([&] { return f[0].get("/api/v1/devices/0?node=b").body["state"] == "idle"; }));
  const auto died = std::chrono::steady_clock::now();
  f[1].kill9();
  auto offline = [](const sse_reader& r) {
    const auto all = r.events();
    return std::count_if(all.begin(), all.end(), [](const sse_event& e) {
      return e.type == "device" && e.data["node"] == "b" && e.data["state"] == "offline";
    });
  };
  ASSERT_TRUE(eventually([&] { return offline(on_a) == 1 && offline(on_c) == 1; }, 15s));
  const double after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - died).count();
  EXPECT_GE(after, 2.5) << "not before its lease (3 s) ran out";
  std::cout << "b's device read offline on a and c's streams " << after
            << " s after it was killed (lease 3 s)\n";
  EXPECT_EQ(f[0].get("/api/v1/devices/0?node=b").body["state"], "offline");
}

TEST(Fleet, TheResultCacheAnswersAJobMeasuredOnAnotherNode) {
  fleet f(2, 1);
  json spec = stream_sweep(3, 0);
  spec["device"] = {{"node", "a"}};
  const auto first = f[0].submit(spec);
  ASSERT_EQ(f[0].wait_job(first)["status"], "succeeded");
  spec["device"] = {{"node", "b"}};
  const json again = f[1].wait_job(f[1].submit(spec));
  EXPECT_EQ(again["node"], "b");
  EXPECT_EQ(again["cached_from"], first);
}

TEST(Fleet, TheDatabaseAndTheNodeMayComeFromTheConfigFileOrTheEnvironment) {
  const std::string db = create_database();
  {
    daemon_process from_file({.mock_devices = 1, .extra_args = {}, .database = "-"});
    const std::string config = from_file.data_dir() + "/fleet.toml";
    std::ofstream(config) << "[serve]\ndatabase = \"" << db << "\"\nnode = \"filed\"\n";
    daemon_process with_config(
        {.mock_devices = 1, .extra_args = {"--config", config}, .database = "-"});
    with_config.start();
    ::setenv("KERNELSCAN_DATABASE", db.c_str(), 1);
    ::setenv("KERNELSCAN_NODE", "from-env", 1);
    daemon_process from_env({.mock_devices = 1, .extra_args = {}, .database = "-"});
    from_env.start();
    ::unsetenv("KERNELSCAN_DATABASE");
    ::unsetenv("KERNELSCAN_NODE");
    std::set<std::string> nodes;
    const auto listed = from_env.get("/api/v1/devices");
    for (const auto& d : listed.body["devices"])
      nodes.insert(d["node"].get<std::string>());
    EXPECT_EQ(nodes, (std::set<std::string>{"filed", "from-env"})) << listed.text;
    EXPECT_NE(with_config.log().find("node filed; store: PostgreSQL at"), std::string::npos);
  }
  drop_database(db);
}

// Whether process `pid` (a child not yet waited for) has ended: /proc shows it a zombie.
bool exited(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] == 'Z';
}

// A node cut off from the database long enough for the server to free its name finds, when it
// reconnects, that another live daemon holds the name (here the test's own connection, as a
// second daemon started with that name would). Two live nodes of one name would take each
// other's jobs and overwrite each other's devices: the one that lost the name stops.
TEST(Fleet, ANodeThatFindsItsNameTakenWhenItReconnectsStops) {
  fleet f(2, 1);
  daemon_process& a = f[0];
  detail::pg_connection db({{"connect_timeout", "10"}, {"dbname", f.database()}});
  const std::int64_t key = postgres_node_lock_key("a");
  // Its PostgreSQL connection, the one holding the name's lock, ends; the test takes the lock
  // before that node reconnects (a second later). pg_locks lists every database's locks: the
  // node "a" of a fleet test running beside this one (a database of its own) holds its own.
  const auto taken = db.exec(
      "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted "
      "AND ((classid::bigint << 32) | objid::bigint) = $1 AND database = "
      "(SELECT oid FROM pg_database WHERE datname = current_database())",
      {key});
  ASSERT_EQ(taken.rows(), 1);
  ASSERT_TRUE(eventually(
      [&] { return db.exec("SELECT pg_try_advisory_lock($1)", {key}).boolean(0, 0); }, 5s));
  ASSERT_TRUE(eventually([&] { return exited(a.pid()); }, 10s)) << a.log();
  EXPECT_NE(a.log().find("lost its node name while cut off from the database"), std::string::npos)
      << a.log();
  // The other node goes on.
  EXPECT_EQ(f[1].wait_job(f[1].submit(stream_sweep(2, 0)))["status"], "succeeded");
}

TEST(Fleet, ABadNodeNameIsAStartUpError) {
  daemon_process d({.mock_devices = 1, .extra_args = {"--node", "gpu 07"}});
  EXPECT_THROW(d.start(), std::runtime_error);
  EXPECT_NE(d.log().find("--node \"gpu 07\": a node name is"), std::string::npos) << d.log();
}

TEST(Fleet, AnUnreachableDatabaseIsAClearStartUpErrorThatShowsNoPassword) {
  daemon_process d({.mock_devices = 1,
                    .extra_args = {"--node", "a"},
                    .database = "postgresql://kernelscan:hunter2@127.0.0.1:1/kernelscan"});
  EXPECT_THROW(d.start(), std::runtime_error);
  const std::string log = d.log();
  EXPECT_NE(log.find("cannot open the database (PostgreSQL at postgresql://kernelscan:***@"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("hunter2"), std::string::npos) << log;
}

}  // namespace
}  // namespace kernelscan::testing

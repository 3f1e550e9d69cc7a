// GET /api/v1/events against a real daemon: job state changes and stored points arrive as
// Server-Sent Events, reconnecting with Last-Event-ID resumes, and streams are limited.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "tests/support/daemon_process.hpp"
#include "tests/support/sse_reader.hpp"

namespace kernelscan::testing {
namespace {

using namespace std::chrono_literals;

TEST(Events, JobStateChangesAndPointsArriveLive) {
  daemon_process daemon;
  daemon.start();
  sse_reader reader(daemon.port());
  ASSERT_TRUE(reader.wait_ready());

  const auto id = daemon.submit(stream_sweep(40, 5));
  ASSERT_TRUE(eventually(
      [&] {
        return reader.has([&](const sse_event& e) {
          return e.type == "job" && e.data["id"] == id && e.data["status"] == "succeeded";
        });
      },
      30s));
  const auto events = reader.events();
  std::vector<std::string> statuses;
  std::uint64_t stored = 0, last_done = 0;
  std::int64_t last_id = 0;
  for (const auto& e : events) {
    if (!e.id.empty()) {
      EXPECT_GT(std::stoll(e.id), last_id) << "ids increase";
      last_id = std::stoll(e.id);
    }
    if (e.type == "job" && e.data["id"] == id) statuses.push_back(e.data["status"]);
    if (e.type == "points" && e.data["job_id"] == id) {
      stored += e.data["stored"].get<std::uint64_t>();
      EXPECT_GE(e.data["done"].get<std::uint64_t>(), last_done) << "progress only grows";
      last_done = e.data["done"];
      EXPECT_EQ(e.data["total"], 40);
      EXPECT_EQ(e.data["failed"], 0);
    }
  }
  EXPECT_EQ(statuses, (std::vector<std::string>{"queued", "running", "succeeded"}));
  EXPECT_EQ(stored, 40u) << "every point is announced once";
  EXPECT_EQ(last_done, 40u);
  // 40 points at 5 ms each, sent at most every 100 ms: coalesced into a few messages.
  const auto point_events = std::count_if(events.begin(), events.end(),
                                          [](const sse_event& e) { return e.type == "points"; });
  EXPECT_LT(point_events, 20);
}

TEST(Events, CancelIsAnnounced) {
  daemon_process daemon;
  daemon.start();
  const auto blocker = daemon.submit(stream_sweep(1, 2000));
  sse_reader reader(daemon.port());
  ASSERT_TRUE(reader.wait_ready());
  const auto queued = daemon.submit(stream_sweep(3, 1));
  ASSERT_EQ(daemon.post("/api/v1/jobs/" + std::to_string(queued) + "/cancel", "").status, 200);
  EXPECT_TRUE(eventually(
      [&] {
        return reader.has([&](const sse_event& e) {
          return e.type == "job" && e.data["id"] == queued && e.data["status"] == "cancelled";
        });
      },
      10s));
  daemon.post("/api/v1/jobs/" + std::to_string(blocker) + "/cancel", "");
}

// A device's state, job, worker, error and roofline arrive as "device" events as they change,
// each before the job event it goes with (whoever sees a job start or end and reads the devices
// sees the device busy or free), and not once per point measured.
TEST(Events, ADevicesChangesArriveAsTheyHappen) {
  daemon_process daemon({.mock_devices = 1, .allow_fault_injection = true, .extra_args = {}});
  daemon.start();
  sse_reader reader(daemon.port());
  ASSERT_TRUE(reader.wait_ready());
  auto index_of = [&](const std::function<bool(const sse_event&)>& pred) {
    const auto events = reader.events();
    const auto it = std::find_if(events.begin(), events.end(), pred);
    return it == events.end() ? -1 : int(it - events.begin());
  };
  auto device = [](const sse_event& e, const char* state) {
    return e.type == "device" && e.data["index"] == 0 && e.data["state"] == state;
  };

  const auto id = daemon.submit(stream_sweep(40, 5));
  ASSERT_EQ(daemon.wait_job(id)["status"], "succeeded");
  const auto job = [&](const char* status) {
    return index_of([&](const sse_event& e) {
      return e.type == "job" && e.data["id"] == id && e.data["status"] == status;
    });
  };
  ASSERT_TRUE(eventually([&] { return job("succeeded") >= 0; }, 10s));
  const int busy = index_of(
      [&](const sse_event& e) { return device(e, "busy") && e.data["current_job"] == id; });
  const int idle = index_of([&](const sse_event& e) {
    return device(e, "idle") && e.data["current_job"].is_null() &&
           std::stoll(e.id) > std::stoll(reader.events()[std::size_t(std::max(busy, 0))].id);
  });
  ASSERT_GE(busy, 0) << "the device busy with the job";
  ASSERT_GE(idle, 0) << "the device free again";
  EXPECT_LT(busy, job("running"));
  EXPECT_LT(idle, job("succeeded"));
  const auto events = reader.events();
  const auto device_events = std::count_if(events.begin(), events.end(),
                                           [](const sse_event& e) { return e.type == "device"; });
  EXPECT_LE(device_events, 4) << "40 points, and no device event for each";
  for (const auto& e : events) {
    if (e.type != "device") continue;
    for (const char* key : {"node", "index", "state", "current_job", "worker_pid",
                            "worker_restarts", "last_error", "measured_at"}) {
      EXPECT_TRUE(e.data.contains(key)) << key << " in " << e.data.dump();
    }
    EXPECT_FALSE(e.data.contains("points_measured")) << e.data.dump();
  }

  // Measured again: measuring, then idle with a new time, as GET /api/v1/devices/0 then has it.
  const json before = daemon.get("/api/v1/devices/0").body["measured"]["measured_at"];
  ASSERT_EQ(daemon.post("/api/v1/devices/0/roofline", "{}").status, 202);
  ASSERT_TRUE(eventually(
      [&] {
        return reader.has([&](const sse_event& e) {
          return device(e, "idle") && e.data["measured_at"].is_string() &&
                 e.data["measured_at"] != before;
        });
      },
      10s));
  EXPECT_TRUE(reader.has([&](const sse_event& e) { return device(e, "measuring"); }));
  const auto measured = daemon.get("/api/v1/devices/0").body["measured"]["measured_at"];
  EXPECT_TRUE(reader.has([&](const sse_event& e) {
    return device(e, "idle") && e.data["measured_at"] == measured;
  })) << "the event's time is the device's";

  // A worker that crashes in a job: its restart (the point's error is the point's, not the
  // device's last error).
  json crash = stream_sweep(1, 1);
  crash["mock"] = {{"fault", "crash"}};
  const auto crashed = daemon.submit(crash);
  ASSERT_EQ(daemon.wait_job(crashed)["status"], "failed");
  ASSERT_TRUE(eventually(
      [&] {
        return reader.has([&](const sse_event& e) {
          return device(e, "idle") && e.data["worker_restarts"].get<int>() >= 1 &&
                 e.data["worker_pid"].is_number();
        });
      },
      10s));
  EXPECT_TRUE(reader.has([&](const sse_event& e) {
    return device(e, "restarting") && e.data["current_job"] == crashed;
  }));
}

TEST(Events, ReconnectingWithLastEventIdResumesAndAStaleIdResets) {
  daemon_process daemon;
  daemon.start();
  const auto first = daemon.submit(stream_sweep(2, 1));
  daemon.wait_job(first);
  const auto second = daemon.submit(stream_sweep(2, 1));
  daemon.wait_job(second);

  // 0: every event the daemon holds, from the first job's "queued" on.
  sse_reader all(daemon.port(), {{"Last-Event-ID", "0"}});
  ASSERT_TRUE(eventually(
      [&] {
        return all.has([&](const sse_event& e) {
          return e.type == "job" && e.data["id"] == second && e.data["status"] == "succeeded";
        });
      },
      10s));
  const auto held = all.events();
  const auto queued = std::find_if(held.begin(), held.end(), [&](const sse_event& e) {
    return e.type == "job" && e.data["id"] == first && e.data["status"] == "queued";
  });
  ASSERT_NE(queued, held.end());
  EXPECT_FALSE(all.has([](const sse_event& e) { return e.type == "reset"; }));

  // Resume from after the first job's "queued" event: everything after it comes again.
  sse_reader resumed(daemon.port(), {{"Last-Event-ID", queued->id}});
  ASSERT_TRUE(eventually(
      [&] {
        return resumed.has([&](const sse_event& e) {
          return e.type == "job" && e.data["id"] == second && e.data["status"] == "succeeded";
        });
      },
      10s));
  EXPECT_FALSE(resumed.has([](const sse_event& e) { return e.type == "reset"; }));
  EXPECT_FALSE(resumed.has([&](const sse_event& e) { return e.id == queued->id; }));

  // An id this daemon never issued (from before a restart): reset, then live events.
  sse_reader stale(daemon.port(), {{"Last-Event-ID", "999999"}});
  ASSERT_TRUE(stale.wait_ready());
  const auto evs = stale.events();
  ASSERT_GE(evs.size(), 2u);
  EXPECT_EQ(evs[0].type, "reset");

  const auto bad = daemon.get("/api/v1/events?last_event_id=abc");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["details"][0]["field"], "last_event_id") << bad.text;
  // The header is named as the header.
  httplib::Client client("127.0.0.1", daemon.port());
  const auto header = client.Get("/api/v1/events", {{"Last-Event-ID", "abc"}});
  ASSERT_TRUE(header);
  EXPECT_EQ(header->status, 400);
  EXPECT_EQ(parse_json(header->body)["error"]["details"][0]["field"], "Last-Event-ID")
      << header->body;
  EXPECT_EQ(daemon.get("/api/v1/events?job=1").status, 400);
}

// Each daemon numbers its events from its own random start: an id from another daemon (another
// node of a fleet, or this one before a restart) is never taken for one of its own, though it
// may be smaller than its newest, and the client is told to reload rather than silently miss
// what that daemon announced.
TEST(Events, AnIdFromAnotherDaemonResets) {
  daemon_process a, b;
  a.start();
  b.start();
  const auto on_a = a.submit(stream_sweep(2, 1));
  a.wait_job(on_a);
  for (int i = 0; i < 3; ++i)
    b.wait_job(b.submit(stream_sweep(2, 1)));
  sse_reader from_a(a.port(), {{"Last-Event-ID", "0"}});
  ASSERT_TRUE(eventually(
      [&] {
        return from_a.has([&](const sse_event& e) {
          return e.type == "job" && e.data["id"] == on_a && e.data["status"] == "succeeded";
        });
      },
      10s));
  std::string last;
  for (const auto& e : from_a.events())
    if (!e.id.empty() && e.type != "ready") last = e.id;
  ASSERT_FALSE(last.empty());

  sse_reader on_b(b.port(), {{"Last-Event-ID", last}});
  ASSERT_TRUE(on_b.wait_ready());
  const auto evs = on_b.events();
  ASSERT_GE(evs.size(), 2u);
  EXPECT_EQ(evs[0].type, "reset") << "an id of daemon a, resumed on daemon b";
}

TEST(Events, StreamsBeyondTheLimitGet429AndShutdownEndsThem) {
  daemon_process daemon({.extra_args = {"--max-event-streams", "2"}});
  daemon.start();
  sse_reader a(daemon.port()), b(daemon.port());
  ASSERT_TRUE(a.wait_ready());
  ASSERT_TRUE(b.wait_ready());
  const auto third = daemon.get("/api/v1/events");
  EXPECT_EQ(third.status, 429);
  EXPECT_EQ(third.body["error"]["type"], "too_many_streams");
  // A stream whose client closed gives its place back within about half a second, not at its
  // next heartbeat (15 s), however idle it is.
  a.stop();
  const auto closed = std::chrono::steady_clock::now();
  std::optional<sse_reader> c;
  EXPECT_TRUE(eventually(
      [&] {
        c.reset();
        c.emplace(daemon.port());
        return c->wait_ready(std::chrono::milliseconds(200));
      },
      5s));
  EXPECT_LT(std::chrono::steady_clock::now() - closed, 5s);
  c.reset();

  // SIGTERM ends open streams promptly: the daemon exits cleanly while b is connected.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(daemon.terminate(), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  EXPECT_TRUE(eventually([&] { return b.ended(); }, 5s));
}

}  // namespace
}  // namespace kernelscan::testing

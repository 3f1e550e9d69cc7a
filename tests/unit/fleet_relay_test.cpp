// Events between nodes: the scheduler's job and point events, relayed through the store to other
// nodes and published there.
#include "server/fleet_relay.hpp"

#include <gtest/gtest.h>

#include "api/job_codec.hpp"
#include "server/job_events.hpp"
#include "storage/sqlite_job_store.hpp"
#include "storage/storage_error.hpp"

namespace kernelscan {
namespace {

using namespace std::chrono_literals;

// A store that records what is published and lets a test deliver events, as another node's
// would arrive.
class relaying_store : public sqlite_job_store {
 public:
  relaying_store() : sqlite_job_store(":memory:") {}
  void publish_event(const store_event& e) override { sent.push_back(e); }
  void subscribe(std::function<void(const store_event&)> f) override { deliver = std::move(f); }
  std::optional<job_record> get(std::int64_t id) override {
    if (unreachable) throw storage_error("cannot connect to PostgreSQL", true);
    return sqlite_job_store::get(id);
  }
  std::vector<store_event> sent;
  std::function<void(const store_event&)> deliver;
  bool unreachable = false;
};

std::int64_t submit(job_store& store) {
  job_submission s;
  s.name = "remote";
  s.op = "stream";
  s.total_points = 3;
  s.spec_json = R"({"kernel":{"op":"stream","source":")" + std::string(9000, 'x') + R"("}})";
  return store.submit(s, 1).id;
}

TEST(FleetRelay, JobIdsAreReadFromTheStartOfAJobEvent) {
  EXPECT_EQ(fleet_relay::job_id_of(R"({"id":42,"name":"x"})"), 42);
  EXPECT_EQ(fleet_relay::job_id_of(R"({"id":7})"), 7);
  EXPECT_FALSE(fleet_relay::job_id_of(R"({"name":"x","id":42})"));
  EXPECT_FALSE(fleet_relay::job_id_of(R"({"id":-3})"));
  EXPECT_FALSE(fleet_relay::job_id_of(R"({"id":12x})"));
  EXPECT_FALSE(fleet_relay::job_id_of(""));
}

TEST(FleetRelay, ThisNodesEventsGoOutSmallAndOtherNodesEventsArePublishedHere) {
  relaying_store store;
  event_hub hub;
  std::vector<job_record> seen;
  fleet_relay relay(store, hub, [&](const job_record& j) { seen.push_back(j); });
  relay.attach();
  const auto id = submit(store);

  // Ours: a job event leaves as its id (the job itself is 9 KB, over a notification's limit).
  job_events events(store, hub);
  events.job_changed(id);
  ASSERT_EQ(store.sent.size(), 1u);
  EXPECT_EQ(store.sent[0].type, "job");
  EXPECT_EQ(store.sent[0].data, R"({"id":)" + std::to_string(id) + "}");
  std::vector<result_row> rows(2);
  rows[0].job_id = rows[1].job_id = id;
  rows[0].ok = true;
  rows[1].index = 1;
  rows[1].ok = false;
  events.points_stored(rows, [](std::int64_t) {
    return std::pair<std::uint64_t, std::uint64_t>{2, 3};
  });
  ASSERT_EQ(store.sent.size(), 2u);
  EXPECT_EQ(store.sent[1].type, "points");
  const json points = json::parse(store.sent[1].data);
  EXPECT_EQ(points["job_id"], id);
  EXPECT_EQ(points["first_index"], 0);
  EXPECT_EQ(points["last_index"], 1);
  EXPECT_EQ(points["stored"], 2);
  EXPECT_EQ(points["failed"], 1);
  EXPECT_EQ(points["done"], 2);
  EXPECT_EQ(points["total"], 3);
  const auto before = hub.last_id();
  EXPECT_EQ(before, 2u);

  // Theirs: published here (not sent back out), the job read from the store in full.
  store.deliver({"job", R"({"id":)" + std::to_string(id) + "}"});
  store.deliver({"points", R"({"job_id":1,"done":3})"});
  store.deliver({"job", R"({"id":999})"});  // unknown here: nothing
  EXPECT_EQ(store.sent.size(), 2u);
  const auto got = hub.wait(before, event_hub::clock::now(), 0ms);
  ASSERT_EQ(got.events.size(), 2u);
  EXPECT_EQ(got.events[0].type, "job");
  EXPECT_EQ(got.events[0].data, job_json_text(*store.get(id)));
  EXPECT_EQ(got.events[1].data, R"({"job_id":1,"done":3})");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].id, id);
}

// The store fails for a moment (its pool still refusing right after PostgreSQL came back) just
// as another node announces a job's end: the streams here reload rather than never hearing of
// it, and whoever waits on the job looks again rather than waiting out its deadline.
TEST(FleetRelay, AnotherNodesJobThatCannotBeReadResetsTheStreamsAndWakesItsWaiters) {
  relaying_store store;
  event_hub hub;
  std::vector<job_record> seen;
  std::vector<std::int64_t> unread;
  fleet_relay relay(
      store, hub, [&](const job_record& j) { seen.push_back(j); }, {},
      [&](std::int64_t id) { unread.push_back(id); });
  relay.attach();
  const auto id = submit(store);
  store.unreachable = true;
  store.deliver({"job", R"({"id":)" + std::to_string(id) + "}"});
  const auto got = hub.wait(0, event_hub::clock::now(), 0ms);
  ASSERT_EQ(got.events.size(), 1u);
  EXPECT_EQ(got.events[0].type, "reset");
  EXPECT_EQ(got.events[0].data, "{}");
  EXPECT_EQ(unread, std::vector<std::int64_t>{id});
  EXPECT_TRUE(seen.empty());
  EXPECT_TRUE(store.sent.empty()) << "nothing is sent back out";
}

TEST(FleetRelay, ARooflineRequestReachesItsNodeAndIsNoEvent) {
  relaying_store store;
  event_hub hub;
  std::vector<std::pair<std::string, int>> asked;
  fleet_relay relay(
      store, hub, [](const job_record&) {},
      [&](const std::string& node, int index) { asked.emplace_back(node, index); });
  relay.attach();
  const store_event e = fleet_relay::roofline_request("gpu-07", 3);
  EXPECT_EQ(e.type, "roofline");
  EXPECT_EQ(json::parse(e.data), json({{"node", "gpu-07"}, {"index", 3}}));
  store.deliver(e);
  store.deliver({"roofline", R"({"node":"gpu-07"})"});  // unreadable: logged, nothing asked
  store.deliver({"roofline", "not json"});
  EXPECT_EQ(asked, (std::vector<std::pair<std::string, int>>{{"gpu-07", 3}}));
  EXPECT_EQ(hub.last_id(), 0u) << "not an event of the stream";
  EXPECT_TRUE(store.sent.empty());
}

}  // namespace
}  // namespace kernelscan

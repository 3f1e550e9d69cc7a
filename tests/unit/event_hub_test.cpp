#include "server/event_hub.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "api/json.hpp"

namespace kernelscan {
namespace {

using namespace std::chrono_literals;

std::string points(std::int64_t job, std::uint64_t first, std::uint64_t last, std::uint64_t done,
                   std::uint64_t failed = 0) {
  return json{{"job_id", job},      {"first_index", first},
              {"last_index", last}, {"stored", last - first + 1},
              {"failed", failed},   {"done", done},
              {"total", 100}}
      .dump();
}

TEST(EventHub, ReturnsOnlyEventsAfterTheGivenId) {
  event_hub hub;
  hub.publish("job", R"({"id":1})");
  hub.publish("job", R"({"id":2})");
  hub.publish("job", R"({"id":3})");
  EXPECT_EQ(hub.last_id(), 3u);
  auto b = hub.wait(1, event_hub::clock::now(), 0ms);
  ASSERT_EQ(b.events.size(), 2u);
  EXPECT_EQ(b.events[0].id, 2u);
  EXPECT_EQ(b.events[1].data, R"({"id":3})");
  EXPECT_FALSE(b.gap);
  EXPECT_TRUE(hub.wait(3, event_hub::clock::now(), 0ms).events.empty());
}

TEST(EventHub, ReportsAGapWhenTheRingDroppedMissedEvents) {
  event_hub hub(4);
  for (int i = 0; i < 10; ++i)
    hub.publish("job", "{}");
  auto b = hub.wait(2, event_hub::clock::now(), 0ms);
  EXPECT_TRUE(b.gap);
  ASSERT_EQ(b.events.size(), 4u);
  EXPECT_EQ(b.events.front().id, 7u);
  // Exactly at the edge: event 6 was dropped but the client has it.
  EXPECT_FALSE(hub.wait(6, event_hub::clock::now(), 0ms).gap);
  EXPECT_TRUE(hub.wait(5, event_hub::clock::now(), 0ms).gap);
}

TEST(EventHub, WaitWakesOnPublishAndOnShutdown) {
  event_hub hub;
  std::thread t([&] {
    std::this_thread::sleep_for(50ms);
    hub.publish("job", "{}");
  });
  const auto started = event_hub::clock::now();
  auto b = hub.wait(0, started + 10s, 0ms);
  t.join();
  EXPECT_EQ(b.events.size(), 1u);
  EXPECT_LT(event_hub::clock::now() - started, 5s);

  std::thread s([&] {
    std::this_thread::sleep_for(50ms);
    hub.shutdown();
  });
  auto c = hub.wait(1, event_hub::clock::now() + 10s, 0ms);
  s.join();
  EXPECT_TRUE(c.stopping);
  EXPECT_TRUE(hub.wait(1, event_hub::clock::now() + 10s, 0ms).stopping);  // at once now
}

TEST(EventHub, WaitTimesOutEmpty) {
  event_hub hub;
  auto b = hub.wait(0, event_hub::clock::now() + 20ms, 0ms);
  EXPECT_TRUE(b.events.empty());
  EXPECT_FALSE(b.stopping);
}

TEST(CoalescePoints, MergesEachJobsPointsAndKeepsOtherEventsInOrder) {
  std::vector<hub_event> in{
      {1, "job", R"({"id":7,"status":"running"})"},   {2, "points", points(7, 0, 9, 10)},
      {3, "points", points(8, 0, 4, 5, 1)},           {4, "points", points(7, 10, 19, 20, 2)},
      {5, "job", R"({"id":8,"status":"succeeded"})"}, {6, "points", points(7, 20, 24, 25)},
  };
  const auto out = coalesce_points(in);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].id, 1u);
  EXPECT_EQ(out[1].id, 3u);  // job 8's points, untouched
  EXPECT_EQ(out[2].id, 5u);
  EXPECT_EQ(out[3].id, 6u);  // job 7's three batches, as new as the newest
  const json merged = json::parse(out[3].data);
  EXPECT_EQ(merged["first_index"], 0);
  EXPECT_EQ(merged["last_index"], 24);
  EXPECT_EQ(merged["stored"], 25);
  EXPECT_EQ(merged["failed"], 2);
  EXPECT_EQ(merged["done"], 25);
  for (std::size_t i = 1; i < out.size(); ++i)
    EXPECT_LT(out[i - 1].id, out[i].id);
}

}  // namespace
}  // namespace kernelscan

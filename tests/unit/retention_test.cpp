#include "server/retention.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "api/json.hpp"
#include "storage/sqlite_job_store.hpp"

namespace kernelscan {
namespace {

using namespace std::chrono_literals;

class Retention : public ::testing::Test {
 protected:
  // A job submitted now and, unless `status` is queued or running, ended `ago` before now.
  std::int64_t job(job_status status, std::chrono::milliseconds ago = 0ms) {
    job_submission s;
    s.name = "j";
    s.op = "stream";
    s.total_points = 1;
    s.spec_json = "{}";
    const std::int64_t now = time.unix_ms();
    const auto id = store.submit(s, now - ago.count()).id;
    if (status == job_status::queued) return id;
    claim_request r;
    r.node = "n";
    r.engine = "mock";
    r.now_ms = now - ago.count();
    const auto lease = store.claim(r)->lease;
    if (status != job_status::running) {
      EXPECT_TRUE(store.finish("n", lease, status, std::nullopt, now - ago.count(), std::nullopt));
    }
    return id;
  }
  // The job ids of the job_deleted events published so far.
  std::vector<std::int64_t> deleted_events() {
    std::vector<std::int64_t> out;
    for (const auto& e : events.wait(0, event_hub::clock::now(), 0ms).events) {
      if (e.type == "job_deleted")
        out.push_back(parse_json(e.data).at("job_id").get<std::int64_t>());
    }
    return out;
  }

  sqlite_job_store store{":memory:"};
  event_hub events;
  manual_clock time;
};

TEST_F(Retention, DeletesTheJobsThatEndedLongerAgoThanItKeepsThemAndSaysWhich) {
  const auto old_ok = job(job_status::succeeded, 49h);
  const auto old_failed = job(job_status::failed, 72h);
  const auto recent = job(job_status::succeeded, 47h);
  const auto queued = job(job_status::queued, 100h);
  const auto running = job(job_status::running, 100h);
  retention sweeper(store, events, time, 48h);
  EXPECT_EQ(sweeper.sweep(), 2u);
  EXPECT_FALSE(store.get(old_ok));
  EXPECT_FALSE(store.get(old_failed));
  EXPECT_TRUE(store.get(recent));
  EXPECT_TRUE(store.get(queued));  // however old: only jobs that ended go
  EXPECT_TRUE(store.get(running));
  EXPECT_EQ(deleted_events(), (std::vector<std::int64_t>{old_failed, old_ok}));  // ended first

  EXPECT_EQ(sweeper.sweep(), 0u);
  time.advance(2h);  // the recent one is now old enough
  EXPECT_EQ(sweeper.sweep(), 1u);
  EXPECT_FALSE(store.get(recent));
}

TEST_F(Retention, ASweepGoesOnPastOneBatchOfJobs) {
  for (int i = 0; i < 250; ++i)
    job(job_status::succeeded, 30min);
  const auto kept = job(job_status::succeeded, 1min);
  retention sweeper(store, events, time, 10min);
  EXPECT_EQ(sweeper.sweep(), 250u);
  EXPECT_EQ(deleted_events().size(), 250u);
  EXPECT_TRUE(store.get(kept));
}

TEST_F(Retention, KeepingEveryJobStartsNoSweep) {
  const auto old = job(job_status::succeeded, 24h * 365);
  retention sweeper(store, events, time, 0ms);
  sweeper.start();
  sweeper.stop();
  EXPECT_TRUE(store.get(old));
}

TEST_F(Retention, TheThreadSweepsAtOnceAndStops) {
  const auto old = job(job_status::succeeded, 2h);
  retention sweeper(store, events, time, 1h);
  sweeper.start();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (store.get(old) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(store.get(old));
  sweeper.stop();
}

TEST(RetentionPeriod, ATenthOfTheTimeKeptBetweenASecondAndAnHour) {
  EXPECT_EQ(retention::period(30s), 3s);
  EXPECT_EQ(retention::period(1s), 1s);
  EXPECT_EQ(retention::period(24h * 30), 1h);
  EXPECT_EQ(retention::period(5h), 30min);
}

}  // namespace
}  // namespace kernelscan

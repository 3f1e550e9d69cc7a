// Dispatch and the node's heartbeat over a real store (SQLite in memory, whose leases follow the
// injected clock): claims, leases renewed, lost and expired, cancels learned from the store.
#include "server/dispatcher.hpp"

#include <gtest/gtest.h>

#include "server/node_heartbeat.hpp"
#include "storage/sqlite_job_store.hpp"

namespace kernelscan {
namespace {

using namespace std::chrono_literals;

job_submission job(std::string name, engine_kind engine = engine_kind::any) {
  job_submission s;
  s.name = std::move(name);
  s.engine = engine;
  s.op = "stream";
  s.total_points = 2;
  s.spec_json = "{}";
  s.request_hash = "h";
  return s;
}

device_info mock_device(int index) {
  device_info d;
  d.index = index;
  d.engine = engine_kind::mock;
  d.model = "MI300X";
  return d;
}

TEST(Dispatcher, AnIdleDeviceClaimsWhatItCanRunUnderALease) {
  manual_clock clock;
  sqlite_job_store store(":memory:");
  dispatcher d(store, clock, "gpu-01", 20s);
  EXPECT_FALSE(d.next_for(mock_device(0)));
  const auto gpu_only = store.submit(job("hip", engine_kind::hip), clock.unix_ms()).id;
  const auto any = store.submit(job("any"), clock.unix_ms()).id;
  const auto c = d.next_for(mock_device(1));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->lease.job_id, any);
  const auto rec = store.get(any);
  EXPECT_EQ(rec->node, "gpu-01");
  EXPECT_EQ(rec->device, 1);
  EXPECT_EQ(rec->started_ms, clock.unix_ms());
  EXPECT_FALSE(d.next_for(mock_device(0)));  // a mock device cannot run the HIP job
  EXPECT_EQ(store.get(gpu_only)->status, job_status::queued);
}

TEST(NodeHeartbeat, RenewsLeasesSoThatOnlyADeadNodesJobsExpire) {
  manual_clock clock;
  sqlite_job_store store(":memory:");
  store.join({"a", "ia", "1", clock.unix_ms(), 0, false}, clock.unix_ms());
  store.join({"b", "ib", "1", clock.unix_ms(), 0, false}, clock.unix_ms());
  dispatcher at_a(store, clock, "a", 20s), at_b(store, clock, "b", 20s);
  node_heartbeat beat_a(store, clock, "a", 20s), beat_b(store, clock, "b", 20s);
  const auto first = store.submit(job("first"), clock.unix_ms()).id;
  const auto second = store.submit(job("second"), clock.unix_ms()).id;
  const auto la = at_a.next_for(mock_device(0))->lease;
  const auto lb = at_b.next_for(mock_device(0))->lease;
  ASSERT_EQ(la.job_id, first);
  ASSERT_EQ(lb.job_id, second);
  EXPECT_EQ(beat_a.due(), clock.now());

  // a keeps beating every lease/4; b died. After the lease, b's job is queued again.
  for (int i = 0; i < 4; ++i) {
    clock.advance(5s);
    EXPECT_LE(beat_a.due(), clock.now());  // time to beat
    const auto out = beat_a.beat({}, std::vector<job_lease>{la});
    ASSERT_TRUE(out.stored);
    EXPECT_TRUE(out.renewal.lost.empty());
    EXPECT_EQ(beat_a.due(), clock.now() + 5s);
    EXPECT_TRUE(out.expired.empty()) << i;
  }
  clock.advance(1s);
  const auto out = beat_a.beat({}, std::vector<job_lease>{la});
  EXPECT_EQ(out.expired, (std::vector<std::int64_t>{second}));
  EXPECT_EQ(store.get(second)->status, job_status::queued);
  EXPECT_EQ(store.get(first)->status, job_status::running);

  // a claims it; b, back too late, learns it lost it, and that a's is none of its business.
  const auto again = at_a.next_for(mock_device(1));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->lease.job_id, second);
  EXPECT_EQ(again->lease.attempt, 2);
  const auto late = beat_b.beat({}, std::vector<job_lease>{lb});
  EXPECT_EQ(late.renewal.lost, (std::vector<std::int64_t>{second}));
  EXPECT_FALSE(
      store.finish("b", lb, job_status::succeeded, std::nullopt, clock.unix_ms(), std::nullopt));

  // A cancel asked of the job a runs reaches a with its next beat.
  ASSERT_EQ(store.cancel(first, clock.unix_ms()), cancel_outcome::requested);
  clock.advance(5s);
  const auto next = beat_a.beat({}, std::vector<job_lease>{la, again->lease});
  EXPECT_EQ(next.renewal.cancel_requested, (std::vector<std::int64_t>{first}));
}

TEST(NodeHeartbeat, WritesTheNodesDevices) {
  manual_clock clock;
  sqlite_job_store store(":memory:");
  store.join({"a", "ia", "1", clock.unix_ms(), 0, false}, clock.unix_ms());
  node_heartbeat beat(store, clock, "a", 8s);
  device_record d;
  d.node = "a";
  d.index = 0;
  d.engine = "mock";
  d.model = "MI300X";
  d.state = "idle";
  d.info_json = "{}";
  ASSERT_TRUE(beat.beat(std::vector<device_record>{d}, {}).stored);
  EXPECT_EQ(beat.due(), clock.now() + 2s);
  clock.advance(3s);
  const auto devices = store.devices(clock.unix_ms());
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].heartbeat_age_ms, 3000);
}

}  // namespace
}  // namespace kernelscan

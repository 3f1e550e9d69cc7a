// Another node's devices as this node reads them from the store, and the watch that tells this
// node's event streams when they go offline.
#include "server/fleet_offline.hpp"

#include <gtest/gtest.h>

#include "server/device_view.hpp"

namespace kernelscan {
namespace {

device_record record(const std::string& node, int index, std::int64_t age_ms,
                     bool stopped = false) {
  device_view v;
  v.node = node;
  v.info.index = index;
  v.info.name = "some GPU";
  v.state = device_state::busy;
  v.current_job = 7;
  v.worker_pid = 321;
  v.worker_restarts = 1;
  device_record r;
  r.node = node;
  r.index = index;
  r.state = "busy";
  r.current_job = 7;
  r.info_json = to_json(v).dump();
  r.heartbeat_age_ms = age_ms;
  r.node_stopped = stopped;
  return r;
}

TEST(FleetOffline, ANodeIsOfflineOnceItLeftOrItsLeaseRanOut) {
  EXPECT_FALSE(node_offline(record("b", 0, 2999), 3));
  EXPECT_TRUE(node_offline(record("b", 0, 3001), 3));
  EXPECT_TRUE(node_offline(record("b", 0, 10, true), 3));
  const json d = other_node_device(record("b", 0, 5000), 1'700'000'000'000, 3);
  EXPECT_EQ(d["state"], "offline");
  EXPECT_TRUE(d["current_job"].is_null());
  EXPECT_TRUE(d["worker_pid"].is_null());
  EXPECT_EQ(d["last_heartbeat_at"], "2023-11-14T22:13:15.000Z");
  EXPECT_EQ(other_node_device(record("b", 0, 100), 1'700'000'000'000, 3)["state"], "busy");
}

TEST(FleetOffline, TheWatchTellsEachDeviceGoingOfflineOnce) {
  offline_watch watch;
  const std::int64_t now = 1'700'000'000'000;
  // First look: c was already offline, which is no news; this node's own devices never count.
  EXPECT_TRUE(watch
                  .look({record("a", 0, 99999, true), record("b", 0, 100), record("b", 1, 100),
                         record("c", 0, 99999)},
                        "a", now, 3)
                  .empty());
  EXPECT_TRUE(
      watch.look({record("b", 0, 900), record("b", 1, 900), record("c", 0, 99999)}, "a", now, 3)
          .empty());
  // b stops: an event for each of its devices, offline, no job, no worker.
  auto events = watch.look({record("b", 0, 100, true), record("b", 1, 100, true)}, "a", now, 3);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], (json{{"node", "b"},
                             {"index", 0},
                             {"state", "offline"},
                             {"current_job", nullptr},
                             {"worker_pid", nullptr},
                             {"worker_restarts", 1},
                             {"last_error", nullptr},
                             {"measured_at", nullptr}}))
      << events[0].dump();
  EXPECT_EQ(events[1]["index"], 1);
  // Still offline: nothing more. Back (it announces itself), then gone again: one more each.
  EXPECT_TRUE(watch.look({record("b", 0, 9000), record("b", 1, 9000)}, "a", now, 3).empty());
  EXPECT_TRUE(watch.look({record("b", 0, 10), record("b", 1, 10)}, "a", now, 3).empty());
  EXPECT_EQ(watch.look({record("b", 0, 4000), record("b", 1, 10)}, "a", now, 3).size(), 1u);
  // A node first seen after the first look, already offline: it went while this node looked.
  EXPECT_EQ(watch.look({record("d", 0, 4000)}, "a", now, 3).size(), 1u);
}

// The event of a device as the API shows it is the event of the device itself: another node's
// device, read from the store, is announced as its own node announces it.
TEST(FleetOffline, ADevicesEventIsTheSameFromItsViewOrItsJson) {
  device_view v;
  v.node = "b";
  v.info.index = 3;
  v.state = device_state::measuring;
  v.worker_pid = 99;
  v.worker_restarts = 2;
  v.last_error = std::string(2000, 'e');
  v.info.measured = measured_roofline{};
  v.info.measured->measured_ms = 1'700'000'000'123;
  EXPECT_EQ(device_event(to_json(v)), device_event(v));
  v.info.measured.reset();
  v.last_error.clear();
  v.current_job = 12;
  v.state = device_state::busy;
  EXPECT_EQ(device_event(to_json(v)), device_event(v));
}

}  // namespace
}  // namespace kernelscan

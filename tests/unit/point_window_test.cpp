#include "server/point_window.hpp"

#include <gtest/gtest.h>

#include "server/worker_supervisor.hpp"

namespace kernelscan {
namespace {

using namespace std::chrono_literals;

void send(point_window& w, std::uint64_t from, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    w.sent({from + i, from + i + 100});
}

TEST(PointWindow, ShortPointsAreQueuedManyAtATimeLongOnesOneByOne) {
  manual_clock clock;
  point_window w(clock);
  w.start_job();
  EXPECT_EQ(w.room(), 1u);  // nothing known yet: one at a time
  send(w, 0, 1);
  EXPECT_EQ(w.room(), 0u);
  w.answered(0.5);  // a short point
  EXPECT_EQ(w.room(), 64u);
  send(w, 1, 64);
  // Topped up in bursts: no room while more than half the window is still queued.
  for (int i = 0; i < 31; ++i)
    w.answered(0.5);
  EXPECT_EQ(w.room(), 0u);
  w.answered(0.5);
  EXPECT_EQ(w.room(), 32u);
  while (!w.empty())
    w.answered(50.0);  // long points
  EXPECT_EQ(w.room(), 1u);
  send(w, 70, 1);
  w.answered(std::nullopt);  // a failure says nothing of the time
  EXPECT_EQ(w.room(), 1u);
  w.start_job();
  EXPECT_EQ(w.room(), 1u);
}

TEST(PointWindow, TheWatchdogDeadlineRunsFromWhenThePointReachedTheHead) {
  manual_clock clock;
  point_window w(clock);
  w.start_job();
  const auto t0 = clock.now();
  send(w, 0, 1);
  w.answered(0.1);
  send(w, 1, 3);
  EXPECT_EQ(w.deadline(2.0), t0 + 2s);
  clock.advance(500ms);
  w.answered(0.1);  // point 2 starts now
  EXPECT_EQ(w.head().index, 2u);
  EXPECT_EQ(w.head_started(), t0 + 500ms);
  EXPECT_EQ(w.deadline(2.0), t0 + 2500ms);
}

TEST(PointWindow, ACrashIsRetriedOnceThenBlamedOnThePoint) {
  manual_clock clock;
  point_window w(clock);
  w.start_job();
  send(w, 7, 1);
  auto d = w.worker_died(false);
  EXPECT_EQ(d.what, point_window::verdict::retry);
  EXPECT_EQ(d.index, 7u);
  EXPECT_EQ(d.attempts, 1);
  EXPECT_EQ(d.unsent, 1u);  // it goes again
  EXPECT_TRUE(w.empty());
  send(w, 7, 1);
  d = w.worker_died(false);
  EXPECT_EQ(d.what, point_window::verdict::device_fault);
  EXPECT_EQ(d.attempts, 2);
  EXPECT_EQ(d.unsent, 0u);  // recorded failed
  // Another point's crash starts counting again.
  send(w, 8, 1);
  EXPECT_EQ(w.worker_died(false).what, point_window::verdict::retry);
}

TEST(PointWindow, ATimeoutFailsThePointAtOnce) {
  manual_clock clock;
  point_window w(clock);
  w.start_job();
  send(w, 3, 1);
  const auto d = w.worker_died(true);
  EXPECT_EQ(d.what, point_window::verdict::timed_out);
  EXPECT_EQ(d.unsent, 0u);
}

TEST(PointWindow, ACrashAmongQueuedPointsRemeasuresThemOneAtATime) {
  manual_clock clock;
  point_window w(clock);
  w.start_job();
  send(w, 0, 1);
  w.answered(0.1);
  send(w, 1, 5);
  const auto d = w.worker_died(false);
  EXPECT_EQ(d.what, point_window::verdict::remeasure);
  EXPECT_EQ(d.unsent, 5u);
  EXPECT_EQ(w.room(), 1u);  // careful
  send(w, 1, 1);
  w.answered(0.1);
  EXPECT_EQ(w.room(), 1u);  // still careful until point 5 is through
  for (std::uint64_t i = 2; i <= 5; ++i) {
    send(w, i, 1);
    w.answered(0.1);
  }
  EXPECT_EQ(w.room(), 64u);
  EXPECT_EQ(w.worker_died(false).what, point_window::verdict::none);
}

TEST(WorkerSupervisor, RestartsAtOnceAfterACrashAndBackOffWhileAWorkerCannotStart) {
  EXPECT_EQ(restart_delay(0), 0ms);
  EXPECT_EQ(restart_delay(1), 200ms);
  EXPECT_EQ(restart_delay(2), 400ms);
  EXPECT_EQ(restart_delay(5), 3200ms);
  EXPECT_EQ(restart_delay(7), 10000ms);
  EXPECT_EQ(restart_delay(50), 10000ms);
}

}  // namespace
}  // namespace kernelscan

#pragma once
// The points a device's worker holds: sent and not yet answered, in order, the first being
// measured. Short points are kept queued at the worker several at a time, topped up in bursts,
// so that neither process sleeps between points (waking the other process costs tens of
// microseconds or more); long points go one at a time, so that a cancel or a shutdown waits for
// one point. When a worker dies, the window decides what the point it held is owed: a retry on
// a fresh worker (once: something else may have killed it), `device_fault` (it died twice),
// `timeout` (its watchdog fired), or, when several points were queued and it is unknown which
// one it died under, measuring them again one at a time so that the next death has a culprit.
//
// Threading: not thread-safe; the scheduler uses it on its io thread. Times come from an
// injected clock.

#include <cstdint>
#include <deque>
#include <optional>

#include "server/clock.hpp"

namespace kernelscan {

class point_window {
 public:
  struct point {
    std::uint64_t index = 0;  // in the job's sweep
    std::uint64_t seq = 0;    // the request's number, which the worker's answer repeats
  };

  explicit point_window(const clock& time) : m_clock(time) {}

  // A new job: forget how long points took.
  void start_job();
  // How many more points to send now: none while more than half the window is still queued.
  std::size_t room() const;
  void sent(point p);
  bool empty() const { return m_points.empty(); }
  std::size_t size() const { return m_points.size(); }
  const point& head() const { return m_points.front(); }
  // When the point being measured started (when it reached the head).
  clock::time_point head_started() const { return m_head_started; }
  // Its watchdog deadline: `budget_s` after it started.
  clock::time_point deadline(double budget_s) const;

  // The head point was answered: measured, the worker having spent `wall_ms` on it, or failed
  // (nullopt: it says nothing of how long points take).
  point answered(std::optional<double> wall_ms);
  // The head point was dropped unmeasured, as asked.
  point dropped();
  // Forgets every point (the job ended, or a shutdown gave up on them).
  void clear() { m_points.clear(); }

  enum class verdict {
    none,         // it held no point
    remeasure,    // several were queued: they go again, one at a time
    retry,        // the point goes again, on the fresh worker
    timed_out,    // the point is recorded failed: timeout
    device_fault  // the point is recorded failed: device_fault, after `attempts` tries
  };
  struct death {
    verdict what = verdict::none;
    std::uint64_t index = 0;  // the point it died under (the head)
    int attempts = 0;         // tries of that point so far, this one included
    std::size_t unsent = 0;   // requests it held that go out again (the head too, unless failed)
  };
  // The worker died (`timed_out`: killed by the watchdog). Clears the window.
  death worker_died(bool timed_out);

 private:
  const clock& m_clock;
  std::deque<point> m_points;
  clock::time_point m_head_started;
  double m_last_point_ms = 1e9;  // the worker's time on the last point; decides the window
  std::optional<std::uint64_t> m_careful_through;
  std::optional<std::uint64_t> m_crashed_index;  // the point a worker last died under
  int m_crashes = 0;                             // ... and how many times
};

}  // namespace kernelscan

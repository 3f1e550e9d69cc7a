#include "server/point_window.hpp"

#include <chrono>

namespace kernelscan {
namespace {

// Tries of a point whose worker died under it: once more on a fresh worker, in case something
// else killed it, then it is the kernel's fault.
constexpr int k_max_attempts = 2;

// Points queued at a worker at once, by how long a point takes.
std::size_t window_for(double point_ms) {
  if (point_ms < 2) return 64;
  if (point_ms < 20) return 4;
  return 1;
}

}  // namespace

void point_window::start_job() {
  m_points.clear();
  m_last_point_ms = 1e9;
  m_careful_through.reset();
}

std::size_t point_window::room() const {
  const std::size_t window = m_careful_through ? 1 : window_for(m_last_point_ms);
  if (m_points.size() > window / 2) return 0;
  return window - m_points.size();
}

void point_window::sent(point p) {
  if (m_points.empty()) m_head_started = m_clock.now();
  m_points.push_back(p);
}

clock::time_point point_window::deadline(double budget_s) const {
  return m_head_started +
         std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(budget_s));
}

point_window::point point_window::answered(std::optional<double> wall_ms) {
  const point p = m_points.front();
  m_points.pop_front();
  m_head_started = m_clock.now();
  if (wall_ms) m_last_point_ms = *wall_ms;
  if (m_careful_through && p.index >= *m_careful_through) m_careful_through.reset();
  return p;
}

point_window::point point_window::dropped() {
  const point p = m_points.front();
  m_points.pop_front();
  m_head_started = m_clock.now();
  return p;
}

point_window::death point_window::worker_died(bool timed_out) {
  death d;
  if (m_points.empty()) return d;
  d.index = m_points.front().index;
  d.unsent = m_points.size();
  d.attempts = (m_crashed_index == d.index ? m_crashes : 0) + 1;
  if (m_points.size() > 1) {
    // Its replies come in batches, so the points it had may be done but unreported.
    d.what = verdict::remeasure;
    m_careful_through = m_points.back().index;
  } else if (timed_out) {
    d.what = verdict::timed_out;
    d.unsent = 0;  // recorded failed
  } else if (d.attempts < k_max_attempts) {
    d.what = verdict::retry;
    m_crashed_index = d.index;
    m_crashes = d.attempts;
  } else {
    d.what = verdict::device_fault;
    d.unsent = 0;
  }
  m_points.clear();
  return d;
}

}  // namespace kernelscan

#pragma once
// Time as the scheduler's parts see it: a steady clock for deadlines and the wall clock for the
// timestamps a job records. Injected, so that tests of timing decisions set the time themselves.
//
// Threading: system_clock is thread-safe; manual_clock is for one test thread.

#include <chrono>
#include <cstdint>

#include "engine/job.hpp"

namespace kernelscan {

class clock {
 public:
  using time_point = std::chrono::steady_clock::time_point;
  using duration = std::chrono::steady_clock::duration;
  virtual ~clock() = default;
  virtual time_point now() const = 0;
  // Unix epoch milliseconds, as stored.
  virtual std::int64_t unix_ms() const = 0;
};

class system_clock final : public clock {
 public:
  time_point now() const override { return std::chrono::steady_clock::now(); }
  std::int64_t unix_ms() const override { return unix_time_ms(); }
};

// Stands still until advanced.
class manual_clock final : public clock {
 public:
  time_point now() const override { return m_now; }
  std::int64_t unix_ms() const override { return m_unix_ms; }
  void advance(duration d) {
    m_now += d;
    m_unix_ms += std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  }

 private:
  time_point m_now = time_point() + std::chrono::hours(1);
  std::int64_t m_unix_ms = 1'800'000'000'000;
};

}  // namespace kernelscan

#pragma once
// What the point runner's unit tests share: a runner over a fake backend (fake_backend.hpp) the
// test keeps a pointer to, and a job plan from a spec's JSON.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/job_spec_codec.hpp"
#include "engine/job_plan.hpp"
#include "engine/point_runner.hpp"
#include "fake_backend.hpp"

namespace kernelscan::testing {

inline job_plan plan_of(const json& j) {
  return compile_plan(parse_job_spec(j, spec_limits::stored()), spec_limits::stored().plan);
}

// The runner owns the backend; `fake` lets the test program its kernels and read its log.
struct runner_fixture {
  fake_backend* fake;
  point_runner runner;
  explicit runner_fixture(std::unique_ptr<fake_backend> f) : fake(f.get()), runner(std::move(f)) {}
};

// In the fake backend's log: the candidate's timed samples, and how many of them came right
// after a cache flush.
inline std::pair<int, int> flushed_samples(const std::vector<std::string>& log) {
  int samples = 0, flushed = 0;
  for (std::size_t i = 1; i < log.size(); ++i) {
    if (log[i] != "sample candidate") continue;
    ++samples;
    flushed += log[i - 1] == "flush";
  }
  return {samples, flushed};
}

}  // namespace kernelscan::testing

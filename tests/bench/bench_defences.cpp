// What the defences against gamed scores cost an honest kernel, on the first OpenCL device (PoCL's
// CPU device where there is no GPU), in one run: two point runners on the same device, one with
// the defences (extra verification trials, input hashes, canaries, poisoned reference copies, a
// fresh module for timing, two rotating buffer sets refreshed and poisoned before every sample,
// checked timed samples) and one without, measure the same points in alternating rounds (the
// order flips every round, so drift of the machine affects both alike). Printed per kernel: each
// side's timed median (the median over rounds of the point's median) and their ratio (target:
// within 1%), and the wall time per point (target: the defences add at most 20%).
//
//   build/tests/bench/bench_defences [rounds]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/job_spec_codec.hpp"
#include "engine/job_plan.hpp"
#include "engine/opencl/opencl_backend.hpp"
#include "tests/support/axpy_spec.hpp"

namespace {

using kernelscan::json;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct bench_case {
  const char* name;
  json spec;
};

// An honest custom kernel checked against a STREAM triad, cold and, at a size whose launches
// take microseconds, hot (batched launches, where the defences' work between samples weighs
// most); and the builtin tiled GEMM.
std::vector<bench_case> cases() {
  const json cold = {{"l2", "cold"}, {"max_time_ms", 400}};
  const json hot = {{"l2", "hot"}, {"max_time_ms", 400}};
  return {{"axpy (custom, N=2^22)",
           {{"kernel", kernelscan::testing::opencl_axpy_kernel()},
            {"sweep", {{"N", {4194304}}}},
            {"timing", cold}}},
          {"axpy hot (N=2^14)",
           {{"kernel", kernelscan::testing::opencl_axpy_kernel()},
            {"sweep", {{"N", {16384}}}},
            {"timing", hot}}},
          {"gemm (builtin, 256^3)",
           {{"kernel",
             {{"op", "gemm"},
              {"m", 256},
              {"n", 256},
              {"k", 256},
              {"dtype", "f32"},
              {"impl", "builtin"}}},
            {"timing", cold}}}};
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 7;
  std::unique_ptr<kernelscan::engine> defended, plain;
  try {
    defended = kernelscan::make_opencl_engine(0, true);
    plain = kernelscan::make_opencl_engine(0, false);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_defences: no OpenCL device: %s\n", e.what());
    return 1;
  }
  std::printf("device: %s; %d rounds, the order of the two runners flipped every round\n",
              defended->device().name.c_str(), rounds);
  std::printf("%-24s %14s %14s %8s %14s %14s %8s\n", "kernel", "median on", "median off", "ratio",
              "wall/pt on", "wall/pt off", "ratio");
  for (const auto& c : cases()) {
    const auto limits = kernelscan::spec_limits::stored();
    const auto plan =
        kernelscan::compile_plan(kernelscan::parse_job_spec(c.spec, limits), limits.plan);
    std::vector<double> median_on, median_off, wall_on, wall_off;
    for (int round = 0; round < rounds; ++round) {
      for (int side = 0; side < 2; ++side) {
        const bool on = (side == 0) == (round % 2 == 0);
        auto& engine = on ? *defended : *plain;
        const auto start = std::chrono::steady_clock::now();
        const auto r = engine.measure(plan, 0, 1000 + std::uint64_t(round));
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                .count();
        if (r.status != kernelscan::point_status::ok || !r.time_us) {
          std::fprintf(stderr, "bench_defences: %s failed: %s\n", c.name,
                       r.error ? r.error->message.c_str() : "no time");
          return 1;
        }
        if (on && !r.flags.empty()) {
          std::fprintf(stderr, "bench_defences: the honest %s was flagged %s\n", c.name,
                       r.flags.front().c_str());
          return 1;
        }
        (on ? median_on : median_off).push_back(r.time_us->median);
        (on ? wall_on : wall_off).push_back(ms);
      }
    }
    const double m_on = median(median_on), m_off = median(median_off);
    const double w_on = median(wall_on), w_off = median(wall_off);
    std::printf("%-24s %11.1f us %11.1f us %8.3f %11.1f ms %11.1f ms %8.3f\n", c.name, m_on, m_off,
                m_on / m_off, w_on, w_off, w_on / w_off);
  }
  return 0;
}

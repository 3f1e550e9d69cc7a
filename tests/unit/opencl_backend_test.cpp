// The OpenCL backend in this process, on the first OpenCL device (PoCL's CPU device in CI): its
// device fills produce exactly the values fill_pattern.hpp defines, it times launches, and its
// local memory scrub leaves nothing of a launch's local memory to the next. The rest of its
// behaviour is checked through a real daemon by the device suite.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/job_spec_codec.hpp"
#include "engine/fill_pattern.hpp"
#include "engine/job_plan.hpp"
#include "engine/opencl/opencl_backend.hpp"
#include "engine/point_kernel.hpp"
#include "engine/point_runner.hpp"

namespace kernelscan {
namespace {

class OpenClBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (discover_opencl_devices().empty()) {
      const char* required = std::getenv("KERNELSCAN_REQUIRE_OPENCL");
      if (required && std::string(required) == "1") FAIL() << "no OpenCL device";
      GTEST_SKIP() << "no OpenCL device";
    }
    m_engine = make_opencl_engine(0);
  }
  device_backend& backend() { return static_cast<point_runner&>(*m_engine).backend(); }
  std::unique_ptr<engine> m_engine;
};

TEST_F(OpenClBackend, DeviceFillsMatchTheHostDefinitionBitForBit) {
  constexpr std::int64_t n = 100003;  // not a multiple of any work-group size
  for (dtype t : {dtype::f32, dtype::f64, dtype::f16, dtype::bf16, dtype::i64, dtype::i32,
                  dtype::u32, dtype::i8, dtype::u8}) {
    for (fill_kind kind :
         {fill_kind::random, fill_kind::arange, fill_kind::value, fill_kind::unwritten}) {
      SCOPED_TRACE(std::string(to_string(t)) + " fill " + std::to_string(int(kind)));
      for (int pattern : {0, 1}) {
        const fill_request f{kind, t, n, 0x5eedull, 0.75, pattern};
        const std::uint64_t bytes = std::uint64_t(n) * size_of(t);
        device_buffer b = backend().allocate(bytes);
        backend().fill(b, f);
        std::vector<unsigned char> device(bytes), host(bytes);
        backend().read(b, 0, device.data(), bytes);
        fill_host(f, host.data());
        ASSERT_EQ(std::memcmp(device.data(), host.data(), bytes), 0) << "pattern " << pattern;
      }
    }
  }
}

TEST_F(OpenClBackend, TimesTheLaunchesOfASample) {
  stream_instance s;
  s.n = 1 << 20;
  const kernel_instance instance = s;
  point_kernel k(backend(), instance);
  const auto buffers = k.own_buffers();
  k.launch(buffers);  // builds and warms the kernel
  backend().synchronize();
  // The fastest of a few samples each: another process on the CPU device slows single samples.
  auto fastest = [&](int launches) {
    timed_sample best;
    for (int trial = 0; trial < 5; ++trial) {
      const timed_sample t = backend().time_launches(kernel_role::candidate, [&] {
        for (int i = 0; i < launches; ++i)
          k.launch(buffers);
      });
      EXPECT_TRUE(t.valid);
      if (trial == 0 || t.time_us < best.time_us) best = t;
    }
    return best;
  };
  const timed_sample one = fastest(1);
  const timed_sample four = fastest(4);
  EXPECT_GT(one.time_us, 0);
  // Four launches take longer than one: the sample spans the first to the last.
  EXPECT_GT(four.time_us, 2 * one.time_us);
}

// A kernel that reads what its work-group's local memory holds when it starts, then leaves a
// mark there that names its launch. On a device that keeps local memory between launches (PoCL's
// CPU device does: each thread's work-groups run in one region) a work-group can find the mark
// of the launch before, which is how a kernel would count its launches or pass state on in local
// memory. After scrub_local_memory() none finds it. (The work-groups after the first on a thread
// find their own launch's mark: PoCL shares the region within a launch too.)
TEST_F(OpenClBackend, TheLocalMemoryScrubLeavesNoMarkForTheNextLaunch) {
  constexpr int groups = 64, block = 256, launches = 6;
  const json spec = json::parse(R"js({
    "kernel": {"op": "custom", "language": "opencl", "entry": "probe",
      "source": "__kernel void probe(__global uint* seen, uint id) { __local uint mark[256]; uint l = get_local_id(0); seen[get_global_id(0)] = mark[(l + 1u) % 256u]; barrier(CLK_LOCAL_MEM_FENCE); mark[l] = id ^ l; }",
      "block": [256, 1, 1], "grid": [64, 1, 1],
      "args": [{"name": "seen", "type": "u32*", "count": 16384, "output": true},
               {"name": "id", "type": "u32", "value": "ID"}]},
    "sweep": {"ID": [4096, 8192, 12288, 16384, 20480, 24576]}})js");
  const job_plan plan =
      compile_plan(parse_job_spec(spec, spec_limits::stored()), spec_limits::stored().plan);
  std::vector<kernel_instance> instances;
  for (int i = 0; i < launches; ++i)
    instances.push_back(plan.resolve(std::uint64_t(i)));
  // Runs the launches in turn, scrubbing before each or not; the work-groups that found the mark
  // of the launch before, over all of them.
  auto found = [&](bool scrub) {
    int marked = 0;
    for (int i = 0; i < launches; ++i) {
      point_kernel k(backend(), instances[std::size_t(i)]);
      const auto buffers = k.own_buffers();
      if (scrub) backend().scrub_local_memory();
      k.launch(buffers);
      backend().synchronize();
      if (i == 0) continue;
      std::vector<std::uint32_t> seen(groups * block);
      backend().read(*buffers[0], 0, seen.data(), seen.size() * 4);
      const std::uint32_t before = std::uint32_t(4096 * i) ^ 1u;  // the mark mark[1] had
      for (int g = 0; g < groups; ++g)
        marked += seen[std::size_t(g * block)] == before ? 1 : 0;
    }
    return marked;
  };
  const int unscrubbed = found(false);
  if (unscrubbed == 0) GTEST_SKIP() << "this device does not keep local memory between launches";
  EXPECT_EQ(found(true), 0) << "without the scrub, " << unscrubbed << " work-groups found it";
}

}  // namespace
}  // namespace kernelscan

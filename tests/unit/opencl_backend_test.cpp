// The OpenCL backend in this process, on the first OpenCL device (PoCL's CPU device in CI): its
// device fills produce exactly the values fill_pattern.hpp defines, and it times launches. The
// rest of its behaviour is checked through a real daemon by the device suite.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/fill_pattern.hpp"
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

}  // namespace
}  // namespace kernelscan

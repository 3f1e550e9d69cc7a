// The OpenCL backend in this process, on the first OpenCL device (PoCL's CPU device in CI): its
// device fills produce exactly the values fill_pattern.hpp defines, it times launches, its
// local memory scrub leaves nothing of a launch's local memory to the next, and a guarded buffer's
// guards are apart from its data but where a kernel writing outside it lands. The rest of its
// behaviour is checked through a real daemon by the device suite.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <gtest/gtest.h>

#include <algorithm>
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
#include "tests/support/axpy_spec.hpp"
#include "tests/support/ceiling_check.hpp"
#include "tests/support/fill_check.hpp"
#include "tests/support/fixed_cost_check.hpp"
#include "tests/support/guard_batch_check.hpp"
#include "tests/support/hash_batch_check.hpp"
#include "tests/support/keystream_check.hpp"
#include "tests/support/probe_launches.hpp"
#include "tests/support/required_device.hpp"
#include "tests/support/screen_check.hpp"

namespace kernelscan {
namespace {

// The plan of `spec`, which must outlive the kernel instances resolved from it.
job_plan plan_of(const json& spec) {
  return compile_plan(parse_job_spec(spec, spec_limits::stored()), spec_limits::stored().plan);
}

class OpenClBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    if (discover_opencl_devices().empty()) {
      if (testing::device_required("KERNELSCAN_REQUIRE_OPENCL")) FAIL() << "no OpenCL device";
      GTEST_SKIP() << "no OpenCL device";
    }
    m_engine = make_opencl_engine(0);
  }
  device_backend& backend() { return static_cast<point_runner&>(*m_engine).backend(); }
  std::unique_ptr<engine> m_engine;
};

// Outputs screened on the device pass and fail as the host's comparison has them.
TEST_F(OpenClBackend, ScreensOutputsOnTheDeviceAsTheHostComparesThem) {
  testing::expect_device_screens_as_the_host_compares(backend());
}

TEST_F(OpenClBackend, DeviceFillsMatchTheHostDefinitionBitForBit) {
  testing::expect_device_fills_match_the_host(backend());
}

TEST_F(OpenClBackend, FillsOfManyBuffersAtOnceMatchTheHostDefinition) {
  testing::expect_batched_fills_match_the_host(backend());
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
    for (int trial = 0; trial < 9; ++trial) {
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
  // Four launches take clearly longer than one: the sample spans the first to the last (one
  // timed alone would make them equal). Not 4×: another test on the CPU device slows either.
  EXPECT_GT(four.time_us, 1.5 * one.time_us);
}

// The fixed cost of a sample the sampling corrects a held batch by: PoCL's profiling times a lone
// command from its own start, so it may well be 0 here.
TEST_F(OpenClBackend, TheFixedCostOfASampleIsLessThanALoneLaunch) {
  testing::expect_a_sample_fixed_cost_below_a_lone_launch(backend(), false);
}

// A measured bandwidth ceiling an honest point beats is measured again over its working set.
TEST_F(OpenClBackend, ABeatenMeasuredBandwidthCeilingIsMeasuredAgainOverThePointsWorkingSet) {
  testing::expect_a_beaten_bandwidth_ceiling_measured_again(*m_engine,
                                                            testing::opencl_axpy_kernel());
}

// A kernel that reads what its work-group's local memory holds when it starts, then leaves a
// mark there that names its launch. On a device that keeps local memory between launches (PoCL's
// CPU device does: each thread's work-groups run in one region) a work-group can find the mark
// of a launch before, which is how a kernel would count its launches or pass state on in local
// memory. After scrub_local_memory() none finds one. (The work-groups after the first on a thread
// find their own launch's mark: PoCL shares the region within a launch too. Any earlier launch's
// mark counts: a thread that ran none of one launch's work-groups still holds an older one.)
TEST_F(OpenClBackend, TheLocalMemoryScrubLeavesNoMarkForTheNextLaunch) {
  constexpr int groups = 64, block = 256, launches = 6;
  const json spec = json::parse(R"js({
    "kernel": {"op": "custom", "language": "opencl", "entry": "probe",
      "source": "__kernel void probe(__global uint* seen, uint id) { __local uint mark[256]; uint l = get_local_id(0); seen[get_global_id(0)] = mark[(l + 1u) % 256u]; barrier(CLK_LOCAL_MEM_FENCE); mark[l] = id ^ l; }",
      "block": [256, 1, 1], "grid": [64, 1, 1],
      "args": [{"name": "seen", "type": "u32*", "count": 16384, "output": true},
               {"name": "id", "type": "u32", "value": "ID"}]},
    "sweep": {"ID": [4096, 8192, 12288, 16384, 20480, 24576]}})js");
  const job_plan plan = plan_of(spec);
  // Runs the launches in turn, scrubbing before each or not; the work-groups that found the mark
  // of the launch before, over all of them.
  auto found = [&](bool scrub) {
    int marked = 0;
    testing::probe_launches(backend(), plan, launches, scrub, groups * block,
                            [&](int i, const std::vector<std::uint32_t>& seen) {
                              if (i == 0) return;
                              // the marks mark[1] had after the launches before
                              for (int g = 0; g < groups; ++g) {
                                const std::uint32_t v = seen[std::size_t(g * block)] ^ 1u;
                                marked +=
                                    v % 4096 == 0 && v > 0 && v <= 4096u * unsigned(i) ? 1 : 0;
                              }
                            });
    return marked;
  };
  const int unscrubbed = found(false);
  if (unscrubbed == 0) GTEST_SKIP() << "this device does not keep local memory between launches";
  EXPECT_EQ(found(true), 0) << "without the scrub, " << unscrubbed << " work-groups found it";
}

// A guarded buffer is a sub-buffer between two guards of one parent allocation: its data and
// its guards hold what was written to each, and fills, writes, copies and built-in ops of the data
// leave the guards as they were. The whole allocation counts against free memory until released.
TEST_F(OpenClBackend, AGuardedBufferKeepsItsDataAndBothGuardsApart) {
  constexpr std::int64_t n = 1001;  // 4004 bytes: not a multiple of the guard
  constexpr std::uint64_t bytes = n * 4, guard = k_canary_bytes;
  const std::uint64_t free_before = backend().free_memory();
  {
    device_buffer b = backend().allocate_guarded(bytes, guard);
    EXPECT_EQ(b.bytes(), bytes);
    EXPECT_EQ(b.guard(), guard);
    EXPECT_NE(b.base(), b.handle());
    EXPECT_GE(free_before - backend().free_memory(), bytes + 2 * guard);

    const std::vector<unsigned char> lead(guard, 0x11), trail(guard, 0x22), data(bytes, 0x33);
    backend().write_guard(b, guard_side::before, lead.data());
    backend().write_guard(b, guard_side::after, trail.data());
    backend().write(b, 0, data.data(), bytes);
    auto expect_guards = [&](const char* after) {
      std::vector<unsigned char> got(guard);
      backend().read_guard(b, guard_side::before, got.data());
      EXPECT_EQ(got, lead) << "the leading guard, after " << after;
      backend().read_guard(b, guard_side::after, got.data());
      EXPECT_EQ(got, trail) << "the trailing guard, after " << after;
    };
    auto read_data = [&] {
      std::vector<unsigned char> got(bytes);
      backend().read(b, 0, got.data(), bytes);
      return got;
    };
    EXPECT_EQ(read_data(), data);
    expect_guards("writing the data");

    for (fill_kind kind : {fill_kind::value, fill_kind::random, fill_kind::unwritten}) {
      const fill_request f{kind, dtype::f32, n, 0x5eedull, 0.75, 1};
      backend().fill(b, f);
      std::vector<unsigned char> host(bytes);
      fill_host(f, host.data());
      EXPECT_EQ(read_data(), host) << "fill " << int(kind);
      expect_guards("a fill");
    }

    // A copy into it, and a STREAM copy (c = a) out of a guarded buffer into it.
    device_buffer plain = backend().allocate(bytes);
    backend().write(plain, 0, data.data(), bytes);
    backend().copy(b, plain, bytes);
    EXPECT_EQ(read_data(), data);
    expect_guards("a copy");
    device_buffer a = backend().allocate_guarded(bytes, guard);
    const fill_request f{fill_kind::arange, dtype::f32, n, 0, 0, 0};
    backend().fill(a, f);
    stream_instance s;
    s.variant = stream_variant::copy;
    s.n = n;
    backend().stream({&s, false, &a, nullptr, &b});
    std::vector<unsigned char> host(bytes);
    fill_host(f, host.data());
    EXPECT_EQ(read_data(), host);
    expect_guards("a STREAM copy");
  }
  EXPECT_EQ(backend().free_memory(), free_before) << "released whole, guards and all";
}

// A kernel given a guarded buffer that writes one element before its start and one past its end
// writes into the guards, on the device: the last bytes of the leading guard, the first of the
// trailing one.
TEST_F(OpenClBackend, AKernelWritingOutsideAGuardedBufferWritesIntoItsGuards) {
  const json spec = json::parse(R"js({
    "kernel": {"op": "custom", "language": "opencl", "entry": "edges",
      "source": "__kernel void edges(__global float* out, int n) { if (get_global_id(0) == 0) { out[-1] = 1.0f; out[n] = 2.0f; } }",
      "block": [64, 1, 1], "grid": [1, 1, 1],
      "args": [{"name": "out", "type": "f32*", "count": 1000, "output": true},
               {"name": "n", "type": "i32", "value": 1000}]}})js");
  const job_plan plan = plan_of(spec);
  const kernel_instance instance = plan.resolve(0);
  point_kernel k(backend(), instance);
  const auto buffers = k.own_buffers();
  const device_buffer& out = *buffers[0];
  ASSERT_EQ(out.guard(), k_canary_bytes);
  const std::vector<unsigned char> zeros(k_canary_bytes, 0);
  backend().write_guard(out, guard_side::before, zeros.data());
  backend().write_guard(out, guard_side::after, zeros.data());
  k.launch(buffers);
  backend().synchronize();

  std::vector<unsigned char> lead(k_canary_bytes), trail(k_canary_bytes);
  backend().read_guard(out, guard_side::before, lead.data());
  backend().read_guard(out, guard_side::after, trail.data());
  float last = 0, first = 0;
  std::memcpy(&last, lead.data() + lead.size() - 4, 4);
  std::memcpy(&first, trail.data(), 4);
  EXPECT_EQ(last, 1.0f) << "out[-1] is the leading guard's last element";
  EXPECT_EQ(first, 2.0f) << "out[n] is the trailing guard's first element";
  EXPECT_TRUE(std::all_of(lead.begin(), lead.end() - 4, [](unsigned char c) { return c == 0; }));
  EXPECT_TRUE(std::all_of(trail.begin() + 4, trail.end(), [](unsigned char c) { return c == 0; }));
}

// The kernel's work-group limit and its local memory at the launch: its own __local array and
// the `local` argument the launch set (OpenCL tells no registers or occupancy; a CPU device's
// private memory size is not the kernel's, so it is left out there).
TEST_F(OpenClBackend, ReportsAKernelsWorkGroupLimitAndTheLocalMemoryOfItsLaunch) {
  const json spec = json::parse(R"js({
    "kernel": {"op": "custom", "language": "opencl", "entry": "tiles",
      "source": "__kernel void tiles(__global float* out, __local float* dyn) { __local float tile[256]; int l = get_local_id(0); tile[l] = l; dyn[l] = 2 * l; barrier(CLK_LOCAL_MEM_FENCE); out[get_global_id(0)] = tile[255 - l] + dyn[l]; }",
      "block": [256, 1, 1], "grid": [2, 1, 1],
      "args": [{"name": "out", "type": "f32*", "count": 512, "output": true},
               {"name": "dyn", "type": "f32*", "count": 512, "local": true}]}})js");
  const job_plan plan = plan_of(spec);
  const kernel_instance instance = plan.resolve(0);
  point_kernel k(backend(), instance);
  k.launch(k.own_buffers());
  backend().synchronize();
  const auto r = k.resources();
  ASSERT_TRUE(r.has_value());
  ASSERT_TRUE(r->shared_bytes.has_value());
  EXPECT_GE(*r->shared_bytes, 256u * 4 + 512u * 4) << "the array and the argument";
  EXPECT_LE(*r->shared_bytes, 2 * (256u * 4 + 512u * 4));
  ASSERT_TRUE(r->max_block_threads.has_value());
  EXPECT_GE(*r->max_block_threads, 256);
  EXPECT_FALSE(r->registers.has_value());
  EXPECT_FALSE(r->occupancy.has_value());
  if (backend().device().type == "cpu") {
    EXPECT_FALSE(r->local_bytes.has_value());
  }

  // A built-in op has none.
  stream_instance st;
  st.n = 1024;
  const kernel_instance builtin = st;
  point_kernel b(backend(), builtin);
  EXPECT_FALSE(b.resources().has_value());
}

// A `local` argument of most of the device's local memory per work-group launches: the kernel's
// local memory size already counts it, and is not added to it again.
TEST_F(OpenClBackend, ALocalArgumentOfMostOfTheLocalMemoryLaunches) {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  ASSERT_EQ(clGetPlatformIDs(1, &platform, nullptr), CL_SUCCESS);
  ASSERT_EQ(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr), CL_SUCCESS);
  cl_ulong local = 0;
  ASSERT_EQ(clGetDeviceInfo(device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, nullptr),
            CL_SUCCESS);
  const std::int64_t floats = std::int64_t(local / 4 * 3 / 4);  // three quarters of it
  json spec = json::parse(R"js({
    "kernel": {"op": "custom", "language": "opencl", "entry": "big",
      "source": "__kernel void big(__global float* out, __local float* scratch) { int l = get_local_id(0); scratch[l] = l; barrier(CLK_LOCAL_MEM_FENCE); out[get_global_id(0)] = scratch[63 - l]; }",
      "block": [64, 1, 1], "grid": [1, 1, 1],
      "args": [{"name": "out", "type": "f32*", "count": 64, "output": true},
               {"name": "scratch", "type": "f32*", "local": true}]}})js");
  spec["kernel"]["args"][1]["count"] = floats;
  const job_plan plan = plan_of(spec);
  const kernel_instance instance = plan.resolve(0);
  point_kernel k(backend(), instance);
  EXPECT_NO_THROW({
    k.launch(k.own_buffers());
    backend().synchronize();
  });
  const auto r = k.resources();
  ASSERT_TRUE(r && r->shared_bytes);
  EXPECT_GE(*r->shared_bytes, std::uint64_t(floats) * 4);
}

// A released buffer's allocation is kept for the next allocation of the same size and guard
// (a CPU device then faults in no fresh pages), and counts as free memory meanwhile.
TEST_F(OpenClBackend, AReleasedBufferIsHandedOutAgainForTheSameSize) {
  constexpr std::uint64_t bytes = 4004, guard = k_canary_bytes;
  const std::uint64_t free_before = backend().free_memory();
  std::uintptr_t handle = 0, base = 0;
  {
    device_buffer b = backend().allocate_guarded(bytes, guard);
    handle = b.handle();
    base = b.base();
  }
  EXPECT_EQ(backend().free_memory(), free_before) << "what the pool keeps counts as free";
  device_buffer again = backend().allocate_guarded(bytes, guard);
  EXPECT_EQ(again.handle(), handle);
  EXPECT_EQ(again.base(), base);
  EXPECT_EQ(again.guard(), guard);
  device_buffer second = backend().allocate_guarded(bytes, guard);
  EXPECT_NE(second.handle(), handle) << "one allocation is handed out once";
  device_buffer plain = backend().allocate(bytes);
  EXPECT_NE(plain.handle(), handle);
  EXPECT_EQ(plain.guard(), 0u);
  // It works as a new one would: written, read back, its guards apart.
  const std::vector<unsigned char> data(bytes, 0x5c), lead(guard, 0x11);
  backend().write_guard(again, guard_side::before, lead.data());
  backend().write(again, 0, data.data(), bytes);
  std::vector<unsigned char> got(bytes), got_lead(guard);
  backend().read(again, 0, got.data(), bytes);
  backend().read_guard(again, guard_side::before, got_lead.data());
  EXPECT_EQ(got, data);
  EXPECT_EQ(got_lead, lead);
}

// The next point gets the buffers the last one released, holding its answers: the runner fills
// them before any launch, so a kernel that writes nothing finds the unwritten pattern, not the
// answers of the point before on the same inputs (the same seed).
TEST_F(OpenClBackend, AKernelFindsNothingOfThePreviousPointInItsReusedBuffers) {
  auto axpy_plan = [](const std::string& statement) {
    return plan_of({{"kernel", testing::opencl_axpy_kernel(statement)},
                    {"sweep", {{"N", {65536}}}},
                    {"timing", {{"l2", "hot"}, {"max_time_ms", 50}}}});
  };
  const point_result honest =
      m_engine->measure(axpy_plan("if (i < n) out[i] = a[i] + s * b[i];"), 0, 42);
  ASSERT_EQ(honest.verification.status, "passed") << honest.verification.note;
  const point_result lazy = m_engine->measure(axpy_plan("if (i < n) out[i] = out[i];"), 0, 42);
  EXPECT_EQ(lazy.verification.status, "failed");
  EXPECT_EQ(lazy.verification.unwritten, 65536u) << lazy.verification.note;
}

// The input hash is computed on the device: equal for the same bytes, different when any one
// byte changes (a whole word, the last word, a byte of the tail past the last whole word), and
// blind to bytes beyond the length it is given.
TEST_F(OpenClBackend, TheDeviceHashSeesEveryByteItCovers) {
  constexpr std::uint64_t bytes = 8 * 70001 + 5;  // more words than the hash has work-items
  std::vector<unsigned char> data(bytes + 64);
  for (std::size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<unsigned char>(mix64(i) >> 7);
  device_buffer b = backend().allocate_guarded(data.size(), k_canary_bytes);
  backend().write(b, 0, data.data(), data.size());
  const std::uint64_t h = backend().hash(b, bytes);
  EXPECT_EQ(backend().hash(b, bytes), h);
  EXPECT_NE(backend().hash(b, bytes - 1), h);
  for (const std::uint64_t at :
       {std::uint64_t(0), std::uint64_t(8 * 65536 + 3), bytes - 6, bytes - 5, bytes - 1}) {
    SCOPED_TRACE("byte " + std::to_string(at));
    const unsigned char changed = data[at] ^ 0x40;
    backend().write(b, at, &changed, 1);
    EXPECT_NE(backend().hash(b, bytes), h);
    backend().write(b, at, &data[at], 1);
    EXPECT_EQ(backend().hash(b, bytes), h);
  }
  const unsigned char beyond = data[bytes] ^ 0xff;
  backend().write(b, bytes, &beyond, 1);
  EXPECT_EQ(backend().hash(b, bytes), h);
  // Two words swapped change it too.
  std::vector<unsigned char> swapped(data.begin(), data.begin() + 16);
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
  backend().write(b, 0, swapped.data(), 16);
  EXPECT_NE(backend().hash(b, bytes), h);
}

// A batch of hashes, their partial results read back together, is each buffer's hash.
TEST_F(OpenClBackend, BatchedHashesAreEachBuffersHash) {
  testing::expect_hash_batches_match(backend());
}

// The runner's canaries are written into and read from every guard of a point in one batch.
TEST_F(OpenClBackend, CanaryBatchesWriteEveryGuardAndFindTheOnesChanged) {
  testing::expect_guard_batches_work(backend());
}

// The answer mask's keystream applied on the device is the one the host applies.
TEST_F(OpenClBackend, TheDeviceKeystreamIsTheAnswerMasks) {
  testing::expect_device_keystream_is_the_masks(backend());
}

}  // namespace
}  // namespace kernelscan

// The GPU engine's backend in this process, on GPU 0: what the device suite cannot see through a
// daemon. Its local memory scrub leaves nothing of one launch's shared memory to the next, in
// all of it: a kernel taking as much dynamic shared memory as a block may have (on an H100 or
// H200, 227 KiB of an SM's 228) finds no word of the mark the launch before left anywhere in it.
// Its keystream kernel masks the reference's answer exactly as the host unmasks it, and its fills
// are the values the host defines.
//
// Label `device_gpu`: on a machine without a GPU it skips, unless KERNELSCAN_REQUIRE_GPU=1 says it
// must run. Whether there is one is asked in a child process (a HIP runtime may abort the
// process that finds none).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "api/job_spec_codec.hpp"
#include "engine/device_backend.hpp"
#include "engine/hip/hip_engine.hpp"
#include "engine/job_plan.hpp"
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

bool gpu_present() {
  const pid_t child = fork();
  if (child == 0) _exit(discover_gpus().empty() ? 1 : 0);
  int status = 0;
  return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
         WEXITSTATUS(status) == 0;
}

class GpuBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    static const bool present = gpu_present();
    if (!present) {
      if (testing::device_required("KERNELSCAN_REQUIRE_GPU")) FAIL() << "no GPU";
      GTEST_SKIP() << "no GPU";
    }
    m_engine = make_hip_engine(0);
  }
  device_backend& backend() { return static_cast<point_runner&>(*m_engine).backend(); }
  std::unique_ptr<engine> m_engine;
};

// Launch i reads every word of its block's dynamic shared memory (S bytes), counts those holding
// the mark of launch i−1 (its ID − 4096), then writes its own mark over all of it.
constexpr const char* k_probe_source = R"(#include <hip/hip_runtime.h>
extern "C" __global__ void probe(unsigned int* seen, unsigned int id, unsigned int before,
                                 unsigned int words) {
  extern __shared__ unsigned int s[];
  unsigned int found = 0;
  for (unsigned int i = threadIdx.x; i < words; i += blockDim.x) found += s[i] == before ? 1u : 0u;
  seen[blockIdx.x * blockDim.x + threadIdx.x] = found;
  __syncthreads();
  for (unsigned int i = threadIdx.x; i < words; i += blockDim.x) s[i] = id;
})";

constexpr int k_block = 256, k_launches = 6;

json probe_spec(std::int64_t shared_bytes, std::int64_t blocks) {
  json ids = json::array();
  for (int i = 1; i <= k_launches; ++i)
    ids.push_back(0x5ca10000 + 4096 * i);
  return {{"kernel",
           {{"op", "custom"},
            {"language", "hip"},
            {"entry", "probe"},
            {"source", k_probe_source},
            {"block", {k_block, 1, 1}},
            {"grid", {blocks, 1, 1}},
            {"shared_bytes", shared_bytes},
            {"args",
             {{{"name", "seen"}, {"type", "u32*"}, {"count", blocks * k_block}, {"output", true}},
              {{"name", "id"}, {"type", "u32"}, {"value", "ID"}},
              {{"name", "before"}, {"type", "u32"}, {"value", "ID - 4096"}},
              {{"name", "words"}, {"type", "u32"}, {"value", shared_bytes / 4}}}}}},
          {"sweep", {{"ID", ids}}}};
}

TEST_F(GpuBackend, TheSharedMemoryScrubLeavesNoMarkAnywhereInAUnitsSharedMemory) {
  const std::int64_t blocks = 2 * std::max(1, backend().device().compute_units);
  // The most a block may have: the first of these sizes (those of the GPUs CUDA and HIP know)
  // the device launches.
  const std::int64_t sizes[] = {232448, 166912, 163840, 101376, 98304, 65536, 49152};
  const auto limits = spec_limits::stored();
  for (std::int64_t bytes : sizes) {
    const json spec = probe_spec(bytes, blocks);
    const job_plan plan = compile_plan(parse_job_spec(spec, limits), limits.plan);
    // Runs the launches in turn, scrubbing before each or not: the blocks that found the mark of
    // the launch before, and the words they found it in, over all launches.
    struct found {
      std::int64_t blocks = 0, words = 0;
    };
    auto run = [&](bool scrub) {
      found f;
      testing::probe_launches(backend(), plan, k_launches, scrub, std::size_t(blocks * k_block),
                              [&](int i, const std::vector<std::uint32_t>& seen) {
                                if (i == 0) return;
                                for (std::int64_t b = 0; b < blocks; ++b) {
                                  std::int64_t words = 0;
                                  for (int t = 0; t < k_block; ++t)
                                    words += seen[std::size_t(b * k_block + t)];
                                  f.blocks += words ? 1 : 0;
                                  f.words += words;
                                }
                              });
      return f;
    };
    found unscrubbed;
    try {
      unscrubbed = run(false);
    } catch (const backend_error& e) {
      if (e.kind() == fault_kind::invalid_launch) continue;  // more than a block may have
      throw;
    }
    SCOPED_TRACE(std::to_string(bytes) + " bytes of shared memory a block, " +
                 std::to_string(blocks) + " blocks");
    if (unscrubbed.blocks == 0) GTEST_SKIP() << "this device clears shared memory between launches";
    const found scrubbed = run(true);
    EXPECT_EQ(scrubbed.blocks, 0) << scrubbed.words << " words found the mark after the scrub; "
                                  << unscrubbed.words << " in " << unscrubbed.blocks
                                  << " blocks without it";
    return;
  }
  FAIL() << "the device launched none of the sizes";
}

// The runner's canaries are written into and read from every guard of a point in one batch.
// The device's fills are the values fill_pattern.hpp defines, as the host and the mock make them.
TEST_F(GpuBackend, DeviceFillsMatchTheHostDefinitionBitForBit) {
  testing::expect_device_fills_match_the_host(backend());
}

TEST_F(GpuBackend, FillsOfManyBuffersAtOnceMatchTheHostDefinition) {
  testing::expect_batched_fills_match_the_host(backend());
}

// Outputs screened on the device pass and fail as the host's comparison has them.
TEST_F(GpuBackend, ScreensOutputsOnTheDeviceAsTheHostComparesThem) {
  testing::expect_device_screens_as_the_host_compares(backend());
}

// A batch of hashes, their folded partial results read back together, is each buffer's hash.
TEST_F(GpuBackend, BatchedHashesAreEachBuffersHash) {
  testing::expect_hash_batches_match(backend());
}

TEST_F(GpuBackend, CanaryBatchesWriteEveryGuardAndFindTheOnesChanged) {
  testing::expect_guard_batches_work(backend());
}

// The fixed cost of a sample the sampling corrects a held batch by: the events around the
// launches and the first one's start cost a GPU something, and less than a launch with them.
TEST_F(GpuBackend, TheFixedCostOfASampleIsMoreThanNothingAndLessThanALoneLaunch) {
  testing::expect_a_sample_fixed_cost_below_a_lone_launch(backend(), true);
}

// A measured bandwidth ceiling an honest point beats is measured again over its working set.
TEST_F(GpuBackend, ABeatenMeasuredBandwidthCeilingIsMeasuredAgainOverThePointsWorkingSet) {
  testing::expect_a_beaten_bandwidth_ceiling_measured_again(*m_engine, testing::hip_axpy_kernel());
}

// The answer mask's keystream applied by the device kernel is the one the host applies.
TEST_F(GpuBackend, TheDeviceKeystreamIsTheAnswerMasks) {
  testing::expect_device_keystream_is_the_masks(backend());
}

}  // namespace
}  // namespace kernelscan

#include "engine/hip/gpu_errors.hpp"

#include <gtest/gtest.h>

#include "engine/cache_flush.hpp"

namespace kernelscan {
namespace {

TEST(GpuErrors, EveryErrorThatLeavesTheContextUnusableReplacesTheWorker) {
  // CUDA 13 documents these as leaving the process unable to use the device; HIP numbers its
  // own alike (700 illegal address, 702 timeout, 710 assert, 719 launch failure, 214 ECC) and
  // adds its HSA runtime failures.
  for (int code :
       {214, 220, 226, 700, 702, 709, 710, 714, 715, 716, 717, 718, 719, 721, 911, 1052, 1053}) {
    EXPECT_EQ(gpu::classify_gpu_error(code), fault_kind::device_lost) << code;
    EXPECT_NE(gpu::gpu_error_hint(code).find("fresh worker"), std::string::npos) << code;
  }
}

TEST(GpuErrors, ALaunchTheDeviceRefusesIsAClearPointError) {
  EXPECT_EQ(gpu::classify_gpu_error(701), fault_kind::invalid_launch);  // out of resources
  EXPECT_NE(gpu::gpu_error_hint(701).find("smaller block"), std::string::npos);
  EXPECT_EQ(gpu::classify_gpu_error(9), fault_kind::invalid_launch);    // configuration
  EXPECT_EQ(gpu::classify_gpu_error(1), fault_kind::invalid_launch);    // invalid value
  EXPECT_EQ(gpu::classify_gpu_error(720), fault_kind::invalid_launch);  // cooperative too large
  EXPECT_EQ(gpu::classify_gpu_error(912), fault_kind::invalid_launch);  // cluster size
}

TEST(GpuErrors, NoCodeForTheDeviceIsUnsupportedAndSaysWhatToBuild) {
  for (int code : {200, 209, 218, 221, 222})
    EXPECT_EQ(gpu::classify_gpu_error(code), fault_kind::unsupported) << code;
  EXPECT_NE(gpu::gpu_error_hint(209).find("KERNELSCAN_HIP_ARCHITECTURES"), std::string::npos);
}

TEST(GpuErrors, MemoryAndTheRest) {
  EXPECT_EQ(gpu::classify_gpu_error(2), fault_kind::out_of_memory);
  EXPECT_EQ(gpu::classify_gpu_error(999), fault_kind::internal);
  EXPECT_EQ(gpu::classify_gpu_error(600), fault_kind::internal);  // not ready
  EXPECT_EQ(gpu::gpu_error_hint(999), "");
}

TEST(CacheFlush, CoversTheInfinityCacheOfAnyMi300FamilyPart) {
  device_info d;
  d.l2_bytes = 4ull << 20;
  d.arch = "gfx942";
  d.name = "AMD Instinct MI308X";  // not in the catalog: its cache comes from its architecture
  EXPECT_EQ(last_level_cache_bytes(d), 256ull << 20);
  EXPECT_EQ(cache_flush_bytes(d), 2 * ((4ull << 20) + (256ull << 20)));
  d.arch = "gfx950";
  EXPECT_EQ(last_level_cache_bytes(d), 256ull << 20);
  d.arch = "gfx90a";  // MI200: no Infinity Cache
  EXPECT_EQ(cache_flush_bytes(d), 64ull << 20);
  d.arch = "sm_90";
  d.l2_bytes = 50ull << 20;  // H100
  EXPECT_EQ(cache_flush_bytes(d), 100ull << 20);
  d.llc_bytes = 32ull << 20;  // what the catalog says wins
  EXPECT_EQ(last_level_cache_bytes(d), 32ull << 20);
}

}  // namespace
}  // namespace kernelscan

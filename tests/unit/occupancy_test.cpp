// The arithmetic that names what limits a kernel's occupancy, on an H100's SM (2048 threads, 32
// blocks, 65536 registers given to a warp 256 at a time, 228 KiB of shared memory with 1 KiB
// taken per block) and on a CDNA CU whose registers HIP does not tell.
#include <gtest/gtest.h>

#include "engine/occupancy.hpp"

namespace kernelscan {
namespace {

unit_limits h100() {
  return {32, 2048, 32, 65536, 256, 228 * 1024, 1024};
}

using limits = std::vector<std::string>;

TEST(Occupancy, AFullUnitIsLimitedByWhatReachesItsEndAtOnce) {
  // 8 blocks of 256 threads at 32 registers: the threads and the registers both run out.
  const block_use use{256, 32, 0};
  EXPECT_EQ(occupancy_limits(h100(), use, 8), (limits{"registers", "threads"}));
  EXPECT_DOUBLE_EQ(occupancy_of(h100(), use, 8), 1.0);
}

TEST(Occupancy, RegistersLimitAKernelThatKeepsManyLive) {
  // 128 registers × 32 threads = 4096 a warp, 8 warps a block: 2 blocks of 65536.
  EXPECT_EQ(occupancy_limits(h100(), {256, 128, 0}, 2), limits{"registers"});
  EXPECT_DOUBLE_EQ(occupancy_of(h100(), {256, 128, 0}, 2), 0.25);
  // 40 × 32 = 1280 a warp (five granules), 4 warps a block: 12 blocks, 48 of 64 warps.
  EXPECT_EQ(occupancy_limits(h100(), {128, 40, 0}, 12), limits{"registers"});
  EXPECT_DOUBLE_EQ(occupancy_of(h100(), {128, 40, 0}, 12), 0.75);
  // 255 × 32 = 8160, given as 8192: 1 block of 256 threads.
  EXPECT_EQ(occupancy_limits(h100(), {256, 255, 0}, 1), limits{"registers"});
}

TEST(Occupancy, SharedMemoryCountsTheBlocksReservedKilobyte) {
  // 48 KiB + 1 KiB reserved a block: 4 of 228 KiB. At 57 KiB, 3 with the reserve (4 without).
  EXPECT_EQ(occupancy_limits(h100(), {256, 32, 48 * 1024}, 4), limits{"shared_memory"});
  EXPECT_DOUBLE_EQ(occupancy_of(h100(), {256, 32, 48 * 1024}, 4), 0.5);
  EXPECT_EQ(occupancy_limits(h100(), {256, 32, 57 * 1024}, 3), limits{"shared_memory"});
}

TEST(Occupancy, SmallBlocksMeetTheUnitsBlockLimit) {
  // 32 blocks of 32 threads: half the unit's warps, the block limit reached.
  EXPECT_EQ(occupancy_limits(h100(), {32, 16, 0}, 32), limits{"blocks"});
  EXPECT_DOUBLE_EQ(occupancy_of(h100(), {32, 16, 0}, 32), 0.5);
  // A block of 48 threads is two warps.
  EXPECT_DOUBLE_EQ(occupancy_of(h100(), {48, 16, 0}, 32), 1.0);
}

TEST(Occupancy, NothingIsNamedWhereTheArithmeticDisagreesWithTheRuntime) {
  EXPECT_TRUE(occupancy_limits(h100(), {256, 32, 0}, 7).empty());
  // A CDNA CU: 64-wide wavefronts, 2048 threads, its registers not told.
  const unit_limits cdna{64, 2048, 0, 0, 0, 64 * 1024, 0};
  EXPECT_TRUE(occupancy_limits(cdna, {256, 32, 0}, 8).empty());
  EXPECT_DOUBLE_EQ(occupancy_of(cdna, {256, 32, 0}, 8), 1.0);
  EXPECT_DOUBLE_EQ(occupancy_of(cdna, {256, 32, 0}, 2), 0.25);
  // A unit whose threads are not known has no occupancy.
  EXPECT_DOUBLE_EQ(occupancy_of(unit_limits{}, {256, 32, 0}, 8), 0.0);
}

}  // namespace
}  // namespace kernelscan

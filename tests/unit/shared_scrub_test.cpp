// How the GPU engine's local memory scrub divides each compute unit's shared memory into blocks,
// for the devices whose figures the runtimes report: every unit's shared memory taken (the
// runtime's reserve per block included), in blocks a unit cannot hold one more of, each within
// what a block may have.
#include "engine/hip/shared_scrub.hpp"

#include <gtest/gtest.h>

namespace kernelscan::gpu {
namespace {

struct device_figures {
  const char* name;
  int units;
  std::int64_t per_unit, per_block, reserved;
};

// A unit's shared memory and what a block may have of it, as CUDA's and HIP's attributes give
// them (CUDA: the opt-in limit); the last, a device whose runtime does not report the unit's.
const device_figures k_devices[] = {
    {"H100 / H200 (sm_90)", 132, 233472, 232448, 1024},
    {"A100 (sm_80)", 108, 167936, 166912, 1024},
    {"L4 (sm_89)", 58, 102400, 101376, 1024},
    {"V100 (sm_70)", 80, 98304, 98304, 0},
    {"P100 (sm_60)", 56, 65536, 49152, 0},
    {"H100, the scrub refused its opt-in", 132, 233472, 49152, 1024},
    {"MI250X (gfx90a)", 110, 65536, 65536, 0},
    {"MI355X (gfx950)", 256, 163840, 163840, 0},
};

TEST(SharedScrub, TakesAllOfEveryUnitsSharedMemoryInBlocksNoUnitHasRoomToRepeat) {
  for (const auto& d : k_devices) {
    SCOPED_TRACE(d.name);
    const shared_scrub_plan p = plan_shared_scrub(d.units, d.per_unit, d.per_block, d.reserved);
    EXPECT_EQ(p.blocks, d.units * p.blocks_per_unit);
    EXPECT_LE(p.bytes_per_block, d.per_block);
    EXPECT_EQ(p.bytes_per_block % 16, 0);
    EXPECT_EQ(p.covered_per_unit, p.blocks_per_unit * (p.bytes_per_block + d.reserved));
    // All of a unit's blocks fit it at once, so they can all be resident and meet.
    EXPECT_LE(p.covered_per_unit, d.per_unit);
    // Within one 16-byte step per block of the whole unit.
    EXPECT_GE(p.covered_per_unit, d.per_unit - 16 * p.blocks_per_unit);
    // One more block would not fit: no unit runs more than its share while the others wait.
    EXPECT_GT(p.covered_per_unit + p.bytes_per_block + d.reserved, d.per_unit);
  }
}

TEST(SharedScrub, OneBlockAsLargeAsABlockMayBeWhereThatIsTheWholeUnit) {
  const shared_scrub_plan hopper = plan_shared_scrub(132, 233472, 232448, 1024);
  EXPECT_EQ(hopper.blocks_per_unit, 1);
  EXPECT_EQ(hopper.bytes_per_block, 232448);   // 227 KiB
  EXPECT_EQ(hopper.covered_per_unit, 233472);  // 228 KiB
  const shared_scrub_plan cdna = plan_shared_scrub(110, 65536, 65536, 0);
  EXPECT_EQ(cdna.blocks, 110);
  EXPECT_EQ(cdna.bytes_per_block, 65536);
  // Without the opt-in, five blocks of 44.6 KiB take an H100 SM's 228 KiB (four of 48 KiB left
  // 32 KiB untouched).
  const shared_scrub_plan refused = plan_shared_scrub(132, 233472, 49152, 1024);
  EXPECT_EQ(refused.blocks_per_unit, 5);
  EXPECT_EQ(refused.blocks, 660);
}

TEST(SharedScrub, AUnitWhoseSharedMemoryIsNotReportedGetsFourBlocks) {
  const shared_scrub_plan p = plan_shared_scrub(4, 0, 49152, 0);
  EXPECT_EQ(p.blocks_per_unit, 4);
  EXPECT_EQ(p.blocks, 16);
  EXPECT_EQ(p.bytes_per_block, 49152);
  const shared_scrub_plan none = plan_shared_scrub(0, 0, 0, 0);
  EXPECT_GE(none.blocks, 1);
  EXPECT_GE(none.bytes_per_block, 16);
}

}  // namespace
}  // namespace kernelscan::gpu

#pragma once
// How the GPU engine overwrites every compute unit's shared memory (the local memory scrub):
// how many blocks, and how much dynamic shared memory each. Plain C++ (no GPU runtime), so the
// unit tests check it on any machine.
//
// A block holds its dynamic shared memory and, on NVIDIA since sm_80, a reserved kilobyte the
// runtime keeps for itself. The scrub gives each unit the fewest blocks that together take all
// of its shared memory, all resident at once: `per_unit` / `blocks_per_unit` bytes each, the
// reserve included. On an H100 or H200 (228 KiB a unit, 227 KiB a block once a kernel opts in,
// 1 KiB reserved) that is one block of 227 KiB per SM; on a CDNA GPU one of 64 KiB per CU. Its
// blocks then cannot share a unit beyond `blocks_per_unit`, and as they wait for each other
// before finishing, none takes the place of another: every unit gets its share.

#include <algorithm>
#include <cstdint>

namespace kernelscan::gpu {

struct shared_scrub_plan {
  std::int64_t blocks = 0;  // in all, `blocks_per_unit` per compute unit
  std::int64_t blocks_per_unit = 0;
  std::int64_t bytes_per_block = 0;   // dynamic shared memory, a multiple of 16
  std::int64_t covered_per_unit = 0;  // bytes of each unit's shared memory the blocks take
};

// `per_unit`: shared memory of a compute unit (0 where the runtime does not say); `per_block`:
// the most dynamic shared memory a block may have; `reserved`: what the runtime keeps of each
// block's share.
inline shared_scrub_plan plan_shared_scrub(int compute_units, std::int64_t per_unit,
                                           std::int64_t per_block, std::int64_t reserved) {
  shared_scrub_plan p;
  const std::int64_t units = std::max(1, compute_units);
  per_block = std::max<std::int64_t>(per_block, 16);
  reserved = std::max<std::int64_t>(reserved, 0);
  if (per_unit <= 0) per_unit = 4 * (per_block + reserved);  // unknown: four blocks' worth
  const std::int64_t whole = per_block + reserved;
  p.blocks_per_unit = (per_unit + whole - 1) / whole;
  p.bytes_per_block = std::min(per_block, (per_unit / p.blocks_per_unit - reserved) / 16 * 16);
  p.bytes_per_block = std::max<std::int64_t>(p.bytes_per_block, 16);
  p.blocks = units * p.blocks_per_unit;
  p.covered_per_unit = p.blocks_per_unit * (p.bytes_per_block + reserved);
  return p;
}

}  // namespace kernelscan::gpu

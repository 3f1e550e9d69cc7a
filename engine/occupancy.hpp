#pragma once
// Occupancy: how many of a launch's blocks one compute unit (an SM, a CU) holds at once, what
// share of the unit's warps (wavefronts) they are, and which of its limits allows no more. The
// runtime's occupancy calculator gives the count
// (hipModuleOccupancyMaxActiveBlocksPerMultiprocessor, CUDA's the same); the arithmetic here names
// the limit, as Nsight Compute's launch statistics do, and says nothing where its count does not
// agree with the runtime's (a limit it does not model, such as AMD's per-SIMD register files). Pure
// functions; standard C++ only (hipcc and nvcc compile it too).

#include <cstdint>
#include <string>
#include <vector>

namespace kernelscan {

// What one compute unit holds. 0: not known (that limit is not modelled).
struct unit_limits {
  int warp_size = 32;
  int max_threads = 0;                // resident threads
  int max_blocks = 0;                 // resident blocks
  int registers = 0;                  // 32-bit registers
  int register_granule = 0;           // registers are given to a warp in multiples of this
  std::uint64_t shared_bytes = 0;     // shared memory
  std::uint64_t shared_reserved = 0;  // taken per block by the runtime (1 KiB on sm_80 and later)
};

// What a block of the launch asks for.
struct block_use {
  std::int64_t threads = 0;
  int registers_per_thread = 0;
  std::uint64_t shared_bytes = 0;  // declared and dynamic
};

// The share of the unit's warps that `blocks` resident blocks of `use` occupy (0..1); 0 where the
// unit's threads are not known.
double occupancy_of(const unit_limits& unit, const block_use& use, int blocks);

// The limits (registers, shared_memory, threads, blocks) that allow exactly `blocks` and no
// more, where every limit the block meets is modelled and the least of them is `blocks`; empty
// otherwise.
std::vector<std::string> occupancy_limits(const unit_limits& unit, const block_use& use,
                                          int blocks);

}  // namespace kernelscan

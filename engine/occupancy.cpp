#include "engine/occupancy.hpp"

#include <algorithm>
#include <limits>

namespace kernelscan {
namespace {

std::int64_t warps_of(const unit_limits& unit, const block_use& use) {
  const std::int64_t w = std::max(unit.warp_size, 1);
  return (use.threads + w - 1) / w;
}

}  // namespace

double occupancy_of(const unit_limits& unit, const block_use& use, int blocks) {
  if (unit.max_threads <= 0 || use.threads <= 0 || blocks <= 0) return 0;
  const double unit_warps = double(unit.max_threads / std::max(unit.warp_size, 1));
  if (unit_warps <= 0) return 0;
  return std::min(1.0, double(warps_of(unit, use) * blocks) / unit_warps);
}

std::vector<std::string> occupancy_limits(const unit_limits& unit, const block_use& use,
                                          int blocks) {
  if (use.threads <= 0 || blocks <= 0 || unit.max_threads <= 0) return {};
  const std::int64_t warps = warps_of(unit, use);
  constexpr std::int64_t none = std::numeric_limits<std::int64_t>::max();
  std::int64_t by_registers = none;
  if (use.registers_per_thread > 0) {
    if (unit.registers <= 0 || unit.register_granule <= 0) return {};
    const std::int64_t g = unit.register_granule;
    const std::int64_t per_warp =
        (std::int64_t(use.registers_per_thread) * unit.warp_size + g - 1) / g * g;
    by_registers = std::int64_t(unit.registers) / (per_warp * warps);
  }
  std::int64_t by_shared = none;
  if (use.shared_bytes > 0) {
    if (unit.shared_bytes == 0) return {};
    by_shared = std::int64_t(unit.shared_bytes / (use.shared_bytes + unit.shared_reserved));
  }
  const std::int64_t by_threads = unit.max_threads / (warps * unit.warp_size);
  const std::int64_t by_blocks = unit.max_blocks > 0 ? unit.max_blocks : none;
  const std::int64_t least = std::min({by_registers, by_shared, by_threads, by_blocks});
  if (least != blocks) return {};
  std::vector<std::string> out;
  if (by_registers == least) out.emplace_back("registers");
  if (by_shared == least) out.emplace_back("shared_memory");
  if (by_threads == least) out.emplace_back("threads");
  if (by_blocks == least) out.emplace_back("blocks");
  return out;
}

}  // namespace kernelscan

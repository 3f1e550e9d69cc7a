#include "engine/cache_flush.hpp"

#include <algorithm>
#include <string_view>

namespace kernelscan {

std::uint64_t last_level_cache_bytes(const device_info& d) {
  if (d.llc_bytes > 0) return d.llc_bytes;
  const std::string_view arch = d.arch;
  if (arch == "gfx942" || arch == "gfx950") return 256ull << 20;
  return 0;
}

std::uint64_t cache_flush_bytes(const device_info& d) {
  return std::max<std::uint64_t>(2 * (d.l2_bytes + last_level_cache_bytes(d)), 64ull << 20);
}

}  // namespace kernelscan

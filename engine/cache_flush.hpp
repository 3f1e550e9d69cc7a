#pragma once
// How much a cold-cache flush must move on a device: twice the caches in front of its memory
// (L2 plus any last-level cache), at least 64 MiB. AMD's MI300 family (gfx942, gfx950) has a
// 256 MiB Infinity Cache on every part, named in the catalog or not (MI300X, MI300A, MI308X,
// MI325X, MI355X...), which no runtime attribute reports. Pure functions; thread-safe.

#include <cstdint>

#include "engine/device_info.hpp"

namespace kernelscan {

// The last-level cache beyond L2: the catalog's where it knows the part, else by architecture.
std::uint64_t last_level_cache_bytes(const device_info& d);

std::uint64_t cache_flush_bytes(const device_info& d);

}  // namespace kernelscan

#pragma once
// The host CPU's caches, for an OpenCL CPU device that runs on it (PoCL, Intel's CPU runtime).
// A CPU device's driver reports its shared last-level cache as the global memory cache, but a
// hot kernel's data stays nearer: in the caches of the cores that ran it (their L2s), which a
// working set larger than they hold leaves for the slower shared cache. Read from Linux's
// /sys/devices/system/cpu (a root the tests can point elsewhere), falling back to sysconf.

#include <cstdint>
#include <filesystem>

namespace kernelscan {

// The host's last-level cache (L3, else L2) as sysconf tells; 0 where it does not.
std::uint64_t host_last_level_cache_bytes();

// The L2 caches of the first `cores` CPUs together, each cache counted once however many CPUs
// share it (hyperthreads share their core's), as `cpu_root` (/sys/devices/system/cpu) describes
// them; where it describes none, sysconf's L2 times `cores`. 0 where neither tells.
std::uint64_t host_core_caches_bytes(
    int cores, const std::filesystem::path& cpu_root = "/sys/devices/system/cpu");

}  // namespace kernelscan

#include "engine/host_caches.hpp"

#include <unistd.h>

#include <cctype>
#include <fstream>
#include <set>
#include <string>

namespace kernelscan {
namespace {

std::string first_line(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

// "1024K", "32M", "512" (bytes): sysfs's sizes.
std::uint64_t parse_size(const std::string& text) {
  std::size_t i = 0;
  std::uint64_t n = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i)
    n = n * 10 + std::uint64_t(text[i] - '0');
  if (i == 0) return 0;
  switch (i < text.size() ? text[i] : ' ') {
    case 'K':
      return n << 10;
    case 'M':
      return n << 20;
    case 'G':
      return n << 30;
    default:
      return n;
  }
}

}  // namespace

std::uint64_t host_last_level_cache_bytes() {
  for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long v = sysconf(name);
    if (v > 0) return std::uint64_t(v);
  }
  return 0;
}

std::uint64_t host_core_caches_bytes(int cores, const std::filesystem::path& cpu_root) {
  if (cores <= 0) return 0;
  std::set<std::string> seen;  // a cache is named by the CPUs that share it
  std::uint64_t total = 0;
  for (int cpu = 0; cpu < cores; ++cpu) {
    const auto caches = cpu_root / ("cpu" + std::to_string(cpu)) / "cache";
    std::error_code ec;
    if (!std::filesystem::is_directory(caches, ec)) break;
    for (const auto& entry : std::filesystem::directory_iterator(caches, ec)) {
      const auto& dir = entry.path();
      if (dir.filename().string().rfind("index", 0) != 0) continue;
      if (first_line(dir / "level") != "2" || first_line(dir / "type") == "Instruction") continue;
      const std::string shared = first_line(dir / "shared_cpu_list");
      if (!seen.insert(shared.empty() ? "cpu" + std::to_string(cpu) : shared).second) continue;
      total += parse_size(first_line(dir / "size"));
    }
  }
  if (total > 0) return total;
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return l2 > 0 ? std::uint64_t(l2) * std::uint64_t(cores) : 0;
}

}  // namespace kernelscan

#include "engine/host_caches.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace kernelscan {
namespace {

namespace fs = std::filesystem;

// A /sys/devices/system/cpu of the test's making, removed with it.
class SysCpu {
 public:
  SysCpu()
      : m_root(fs::temp_directory_path() /
               ("kernelscan-syscpu-" +
                std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::remove_all(m_root);
    fs::create_directories(m_root);
  }
  ~SysCpu() { fs::remove_all(m_root); }
  const fs::path& root() const { return m_root; }

  void cache(int cpu, int index, int level, const std::string& type, const std::string& size,
             const std::string& shared) {
    const fs::path dir =
        m_root / ("cpu" + std::to_string(cpu)) / "cache" / ("index" + std::to_string(index));
    fs::create_directories(dir);
    write(dir / "level", std::to_string(level));
    write(dir / "type", type);
    write(dir / "size", size);
    write(dir / "shared_cpu_list", shared);
  }

 private:
  static void write(const fs::path& file, const std::string& text) {
    std::ofstream(file) << text << "\n";
  }
  fs::path m_root;
};

// Each CPU's caches: L1 data and instruction of its own, an L2 shared with its hyperthread
// sibling (CPU n and n + 4), an L3 shared by all.
void four_cores_eight_threads(SysCpu& sys) {
  for (int cpu = 0; cpu < 8; ++cpu) {
    const int core = cpu % 4;
    const std::string siblings = std::to_string(core) + "," + std::to_string(core + 4);
    sys.cache(cpu, 0, 1, "Data", "48K", siblings);
    sys.cache(cpu, 1, 1, "Instruction", "32K", siblings);
    sys.cache(cpu, 2, 2, "Unified", "1024K", siblings);
    sys.cache(cpu, 3, 3, "Unified", "32M", "0-7");
  }
}

TEST(HostCaches, TheCoresCachesAreTheirL2sEachCountedOnce) {
  SysCpu sys;
  four_cores_eight_threads(sys);
  EXPECT_EQ(host_core_caches_bytes(8, sys.root()), 4ull << 20);  // four cores, two threads each
  EXPECT_EQ(host_core_caches_bytes(2, sys.root()), 2ull << 20);
  EXPECT_EQ(host_core_caches_bytes(6, sys.root()), 4ull << 20);   // 4 and 5 share 0's and 1's
  EXPECT_EQ(host_core_caches_bytes(16, sys.root()), 4ull << 20);  // more than the host has
  EXPECT_EQ(host_core_caches_bytes(0, sys.root()), 0u);
}

TEST(HostCaches, AnL2PerCpuAndSizesInEveryUnit) {
  SysCpu sys;
  sys.cache(0, 0, 2, "Unified", "2M", "0");
  sys.cache(1, 0, 2, "Unified", "524288", "1");
  sys.cache(2, 0, 2, "Data", "512K", "");  // no list: its own
  EXPECT_EQ(host_core_caches_bytes(3, sys.root()), (2ull << 20) + (512ull << 10) * 2);
}

TEST(HostCaches, WithoutSysfsSysconfsL2PerCore) {
  SysCpu sys;  // empty
  const std::uint64_t two = host_core_caches_bytes(2, sys.root());
  EXPECT_EQ(host_core_caches_bytes(4, sys.root()), two * 2);
}

}  // namespace
}  // namespace kernelscan

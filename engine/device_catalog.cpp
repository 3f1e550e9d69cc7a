#include "engine/device_catalog.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace kernelscan {
namespace {

constexpr std::uint64_t MiB = 1024ull * 1024;
constexpr std::uint64_t GB = 1000ull * 1000 * 1000;

// Dense (non-sparse) datasheet peaks. MI250X is one GCD, which HIP presents as one device.
constexpr std::array<device_model, 9> k_catalog{{
    {"MI300X",
     "AMD",
     "AMD Instinct MI300X",
     "gfx942",
     304,
     2100,
     192 * GB,
     32 * MiB,
     256 * MiB,
     4.0,
     {163.4, 163.4, 1307.4, 1307.4, 2614.9, 81.7, 5300}},
    {"MI325X",
     "AMD",
     "AMD Instinct MI325X",
     "gfx942",
     304,
     2100,
     256 * GB,
     32 * MiB,
     256 * MiB,
     4.0,
     {163.4, 163.4, 1307.4, 1307.4, 2614.9, 81.7, 6000}},
    {"MI355X",
     "AMD",
     "AMD Instinct MI355X",
     "gfx950",
     256,
     2400,
     288 * GB,
     32 * MiB,
     256 * MiB,
     4.0,
     {78.6, 157.3, 2516.6, 2516.6, 5033.2, 157.3, 8000}},
    {"MI250X",
     "AMD",
     "AMD Instinct MI250X (one GCD)",
     "gfx90a",
     110,
     1700,
     64 * GB,
     8 * MiB,
     0,
     5.0,
     {47.9, 47.9, 191.5, 191.5, 191.5, 23.9, 1600}},
    {"MI210",
     "AMD",
     "AMD Instinct MI210",
     "gfx90a",
     104,
     1700,
     64 * GB,
     8 * MiB,
     0,
     5.0,
     {45.3, 45.3, 181.0, 181.0, 181.0, 22.6, 1600}},
    {"H100-SXM",
     "NVIDIA",
     "NVIDIA H100 SXM",
     "sm_90",
     132,
     1980,
     80 * GB,
     50 * MiB,
     0,
     2.5,
     {66.9, 66.9, 989.4, 989.4, 1978.9, 66.9, 3350}},
    {"H100-PCIe",
     "NVIDIA",
     "NVIDIA H100 PCIe",
     "sm_90",
     114,
     1755,
     80 * GB,
     50 * MiB,
     0,
     2.5,
     {51.2, 51.2, 756.5, 756.5, 1513.0, 51.2, 2000}},
    {"H200",
     "NVIDIA",
     "NVIDIA H200",
     "sm_90",
     132,
     1980,
     141 * GB,
     50 * MiB,
     0,
     2.5,
     {66.9, 66.9, 989.4, 989.4, 1978.9, 66.9, 4800}},
    {"A100",
     "NVIDIA",
     "NVIDIA A100 SXM 80GB",
     "sm_80",
     108,
     1410,
     80 * GB,
     40 * MiB,
     0,
     3.0,
     {19.5, 19.5, 312.0, 312.0, 624.0, 19.5, 2039}},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

}  // namespace

double device_peaks::tflops_for(dtype t) const {
  // A kernel in f32, f16 or bf16 may compute in f32 on the vector units: their peak bounds it too
  // where it is higher than the GEMM's (a device whose GEMM library is weak, or missing for the
  // type).
  switch (t) {
    case dtype::f64:
      return f64_tflops;
    case dtype::f32:
      return std::max(f32_tflops, vector_f32_tflops);
    case dtype::f16:
      return std::max(f16_tflops, vector_f32_tflops);
    case dtype::bf16:
      return std::max(bf16_tflops, vector_f32_tflops);
    case dtype::i8:
    case dtype::u8:
      return i8_tops;
    default:
      return vector_f32_tflops;
  }
}

std::span<const device_model> device_catalog() {
  return k_catalog;
}

const device_model* find_device_model(std::string_view key) {
  std::string k = lower(key);
  if (k == "h100") k = "h100-sxm";
  for (const auto& m : k_catalog) {
    if (lower(m.key) == k) return &m;
  }
  return nullptr;
}

const device_model* match_device_model(std::string_view name) {
  const std::string n = lower(name);
  // The longest matching key wins, so "H100 PCIe" is not taken for the SXM part.
  const device_model* best = nullptr;
  for (const auto& m : k_catalog) {
    std::string key = lower(m.key);
    const auto dash = key.find('-');
    const std::string base = key.substr(0, dash);
    if (n.find(base) == std::string::npos) continue;
    if (dash != std::string::npos && n.find(key.substr(dash + 1)) == std::string::npos &&
        key != "h100-sxm") {
      continue;
    }
    if (!best || m.key.size() > best->key.size()) best = &m;
  }
  return best;
}

}  // namespace kernelscan

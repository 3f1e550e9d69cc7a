#pragma once
// The GPU's clocks, temperature and power as its vendor's management library reports them: NVML
// (libnvidia-ml.so.1) on NVIDIA, ROCm SMI (librocm_smi64.so) on AMD. The HIP engine reads one per
// measured point and drops samples taken while the device throttled.
//
// Plain C++: the library is dlopen'ed on the first open() for its vendor and its few functions
// declared in telemetry.cpp, so this builds, links and runs on machines without a GPU or driver
// (open() then returns nullptr). The handle stays loaded for the life of the process; the
// library's init runs while at least one telemetry of its vendor is open and its shutdown when the
// last one closes.
//
// Threading: open() may be called from any thread. One telemetry is read by one thread at a time;
// distinct telemetry objects may be read concurrently (NVML and ROCm SMI are thread-safe).
//
// Units: MHz, degrees Celsius, watts.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kernelscan {

struct telemetry_reading {
  std::optional<double> sm_clock_mhz;      // current shader (SM / SCLK) clock
  std::optional<double> max_sm_clock_mhz;  // the clock the part runs at when not throttled
  std::optional<double> temperature_c;     // NVIDIA: the GPU die; AMD: junction, else edge
  std::optional<double> power_w;           // board (NVIDIA) or socket (AMD) power
  // Why the clocks are below their maximum, as NVML names them ("sw_power_cap", "hw_slowdown",
  // "sw_thermal", "hw_thermal", "hw_power_brake", "gpu_idle", ...): valid when reasons_known
  // (NVML); empty there means none. ROCm SMI tells no reasons.
  std::vector<std::string> throttle_reasons;
  bool reasons_known = false;

  // Whether a sample taken now is not the kernel's normal speed. Where the driver says why the
  // clocks are low, only a slowdown the part does not run at under steady load counts: thermal
  // or hardware slowdown and the power brake. A power cap (sw_power_cap) is how a busy GPU
  // normally runs and is kept. Where it cannot say (AMD), nvbench's rule: the current clock
  // below 75% of the max clock. False when the clocks are unknown: a reading we cannot judge
  // does not discard a sample.
  bool throttled() const;
};

class telemetry {
 public:
  // The management library's view of the GPU with this PCI bus id ("0000:41:00.0", as the
  // runtime reports it), or nullptr when the vendor is neither "NVIDIA" nor "AMD", the library is
  // absent or fails to initialise, or it does not list that GPU. Never throws; logs the reason at
  // debug level.
  static std::unique_ptr<telemetry> open(std::string_view vendor, std::string_view pci_bus_id);

  virtual ~telemetry() = default;

  // One reading; fields the library cannot give stay empty. A few library calls, each tens of
  // microseconds: cheap enough to call every few milliseconds. Library errors leave fields empty;
  // it throws only std::bad_alloc.
  virtual telemetry_reading read() = 0;
};

// Pure helpers of telemetry.cpp, here so that the unit tests reach them.
namespace telemetry_detail {

struct pci_address {
  std::uint32_t domain = 0;
  std::uint32_t bus = 0;       // 0..0xff
  std::uint32_t device = 0;    // 0..0x1f
  std::uint32_t function = 0;  // 0..7
  bool operator==(const pci_address&) const = default;
};

// "[domain:]bus:device.function" in hex, any case: a domain of up to 8 digits (CUDA and HIP
// print 4, NVML 8), bus and device of up to 2, function 1. nullopt when malformed or out of range.
std::optional<pci_address> parse_pci_bus_id(std::string_view text);

// NVML's busId spelling, "%08X:%02X:%02X.%X" (nvml.h's NVML_DEVICE_PCI_BUS_ID_FMT).
std::string nvml_bus_id(const pci_address& a);

// ROCm SMI's BDFID (rsmi_dev_pci_id_get): domain in bits [63:32], partition [31:28], bus [15:8],
// device [7:3], function [2:0]. The partition is not part of the PCI address and is dropped.
pci_address decode_rsmi_bdfid(std::uint64_t bdfid);

// The names of the bits set in NVML's clocks event (throttle) reason mask; a bit nvml.h did not
// name when this was written reads "unknown_0x...".
std::vector<std::string> nvml_clock_event_reasons(std::uint64_t mask);

struct sclk_reading {
  double current_mhz = 0;
  double max_mhz = 0;
};

// The current and highest system clock from the bytes rsmi_dev_gpu_clk_freq_get wrote into a
// zeroed buffer. rsmi_frequencies_t changed layout in ROCm SMI 7.0 (ROCm 6.0): `bool
// has_deep_sleep` was put first and the frequency array grew from 32 to 33 entries, moving every
// field. Both layouts are tried and a reading is accepted only where the layout's counts and
// frequencies are consistent (no reading can be consistent in both); nullopt otherwise.
std::optional<sclk_reading> decode_rsmi_frequencies(std::span<const std::byte> raw);

}  // namespace telemetry_detail
}  // namespace kernelscan

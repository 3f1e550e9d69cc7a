#include "engine/hip/telemetry.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace kernelscan {
namespace {

using telemetry_detail::pci_address;

// An address no machine has a GPU at, so that these tests hold on GPU machines too.
constexpr const char* nowhere = "00ff:ff:1f.7";

TEST(TelemetryOpen, UnknownVendorGivesNothing) {
  EXPECT_EQ(telemetry::open("Intel", "0000:41:00.0"), nullptr);
  EXPECT_EQ(telemetry::open("", "0000:41:00.0"), nullptr);
  EXPECT_EQ(telemetry::open("nvidia", "0000:41:00.0"), nullptr);  // the runtime's spelling only
}

TEST(TelemetryOpen, MalformedBusIdGivesNothing) {
  EXPECT_EQ(telemetry::open("NVIDIA", "GPU-0"), nullptr);
  EXPECT_EQ(telemetry::open("AMD", ""), nullptr);
}

// Without the library (this machine) or with it but no GPU there, open() answers nullptr, and
// again on a second call, when the library has been looked for once already.
TEST(TelemetryOpen, AbsentLibraryOrGpuGivesNothing) {
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(telemetry::open("NVIDIA", nowhere), nullptr);
    EXPECT_EQ(telemetry::open("AMD", nowhere), nullptr);
  }
}

// The real path on a GPU machine: KERNELSCAN_TEST_GPU_VENDOR=NVIDIA|AMD and
// KERNELSCAN_TEST_GPU_BUS_ID=0000:41:00.0 name a GPU that is there.
TEST(TelemetryOpen, ReadsTheGpuNamedByTheEnvironment) {
  const char* vendor = std::getenv("KERNELSCAN_TEST_GPU_VENDOR");
  const char* bus_id = std::getenv("KERNELSCAN_TEST_GPU_BUS_ID");
  if (!vendor || !bus_id) GTEST_SKIP() << "no KERNELSCAN_TEST_GPU_VENDOR/_BUS_ID";
  auto t = telemetry::open(vendor, bus_id);
  ASSERT_NE(t, nullptr);
  const auto r = t->read();
  ASSERT_TRUE(r.sm_clock_mhz && r.max_sm_clock_mhz);
  EXPECT_GT(*r.sm_clock_mhz, 0);
  EXPECT_GE(*r.max_sm_clock_mhz, *r.sm_clock_mhz);
  ASSERT_TRUE(r.temperature_c);
  EXPECT_GT(*r.temperature_c, 0);
  EXPECT_LT(*r.temperature_c, 150);
  ASSERT_TRUE(r.power_w);
  EXPECT_GT(*r.power_w, 0);
  // A second reader of the same library, and the first still reads after it closes.
  telemetry::open(vendor, bus_id).reset();
  EXPECT_TRUE(t->read().sm_clock_mhz);
}

TEST(TelemetryReading, ThrottledBelowThreeQuartersOfTheMaxClock) {
  telemetry_reading r;
  r.max_sm_clock_mhz = 2000;
  r.sm_clock_mhz = 1000;
  EXPECT_TRUE(r.throttled());
  r.sm_clock_mhz = 1499;
  EXPECT_TRUE(r.throttled());
  r.sm_clock_mhz = 1500;
  EXPECT_FALSE(r.throttled());
  r.sm_clock_mhz = 1980;
  EXPECT_FALSE(r.throttled());
}

TEST(TelemetryReading, WhereTheDriverSaysWhyOnlyASlowdownIsThrottling) {
  telemetry_reading r;
  r.reasons_known = true;
  r.max_sm_clock_mhz = 1980;
  // A GPU at its power cap under load runs at 1200 MHz: that is its speed, not a throttle.
  r.sm_clock_mhz = 1200;
  r.throttle_reasons = {"sw_power_cap"};
  EXPECT_FALSE(r.throttled());
  r.throttle_reasons = {};
  EXPECT_FALSE(r.throttled());
  for (const char* reason : {"hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"}) {
    r.throttle_reasons = {"sw_power_cap", reason};
    EXPECT_TRUE(r.throttled()) << reason;
  }
  // Even at full clock, a thermal slowdown reported now discards the sample.
  r.sm_clock_mhz = 1980;
  r.throttle_reasons = {"hw_thermal"};
  EXPECT_TRUE(r.throttled());
}

TEST(TelemetryReading, UnknownClocksAreNotThrottled) {
  telemetry_reading r;
  EXPECT_FALSE(r.throttled());
  r.sm_clock_mhz = 100;
  EXPECT_FALSE(r.throttled());
  r.sm_clock_mhz.reset();
  r.max_sm_clock_mhz = 2000;
  EXPECT_FALSE(r.throttled());
  r.sm_clock_mhz = 100;
  r.max_sm_clock_mhz = 0;
  EXPECT_FALSE(r.throttled());
  // Reasons alone do not discard a sample: NVML reports gpu_idle between kernels.
  telemetry_reading idle;
  idle.throttle_reasons = {"gpu_idle"};
  EXPECT_FALSE(idle.throttled());
}

TEST(TelemetryPciBusId, ParsesTheRuntimesAndNvmlsSpellings) {
  EXPECT_EQ(telemetry_detail::parse_pci_bus_id("0000:41:00.0"), (pci_address{0, 0x41, 0, 0}));
  EXPECT_EQ(telemetry_detail::parse_pci_bus_id("00000000:41:00.0"), (pci_address{0, 0x41, 0, 0}));
  EXPECT_EQ(telemetry_detail::parse_pci_bus_id("0001:c1:1f.7"), (pci_address{1, 0xc1, 0x1f, 7}));
  EXPECT_EQ(telemetry_detail::parse_pci_bus_id("FFFFFFFF:C1:1F.7"),
            (pci_address{0xffffffff, 0xc1, 0x1f, 7}));
  EXPECT_EQ(telemetry_detail::parse_pci_bus_id("41:00.0"), (pci_address{0, 0x41, 0, 0}));
  EXPECT_EQ(telemetry_detail::parse_pci_bus_id("0:3:1.0"), (pci_address{0, 3, 1, 0}));
}

TEST(TelemetryPciBusId, RejectsMalformedAndOutOfRange) {
  for (const char* bad :
       {"", "0000:41:00", "0000:41.0", ".0", "0000:41:20.0", "0000:41:00.8", "0000:141:00.0",
        "000000000:41:00.0", "0000:41:00.00", "zz:00.0", "0000:41:00.0 ", " 0000:41:00.0",
        "0000:-1:00.0", "0000:+1:00.0", "0x00:41:00.0", "0000::00.0", "0:0000:41:00.0"})
    EXPECT_FALSE(telemetry_detail::parse_pci_bus_id(bad)) << bad;
}

TEST(TelemetryPciBusId, FormatsNvmlsSpellingAndRoundTrips) {
  EXPECT_EQ(telemetry_detail::nvml_bus_id({0, 0x41, 0, 0}), "00000000:41:00.0");
  EXPECT_EQ(telemetry_detail::nvml_bus_id({0x1a, 0xc1, 0x1f, 0}), "0000001A:C1:1F.0");
  const pci_address a{0xabcd, 0x9e, 0x13, 3};
  EXPECT_EQ(telemetry_detail::parse_pci_bus_id(telemetry_detail::nvml_bus_id(a)), a);
}

TEST(TelemetryRsmi, DecodesTheBdfid) {
  // rocm_smi.h: ((DOMAIN & 0xFFFFFFFF) << 32) | ((Partition & 0xF) << 28) | ((BUS & 0xFF) << 8)
  //             | ((DEVICE & 0x1F) << 3) | (FUNCTION & 0x7)
  const auto bdfid = [](std::uint64_t domain, std::uint64_t partition, std::uint64_t bus,
                        std::uint64_t device, std::uint64_t function) {
    return (domain << 32) | (partition << 28) | (bus << 8) | (device << 3) | function;
  };
  EXPECT_EQ(telemetry_detail::decode_rsmi_bdfid(0x4100), (pci_address{0, 0x41, 0, 0}));
  EXPECT_EQ(telemetry_detail::decode_rsmi_bdfid(bdfid(0, 0, 0x41, 0, 0)),
            telemetry_detail::parse_pci_bus_id("0000:41:00.0"));
  // The partition is not part of the address.
  EXPECT_EQ(telemetry_detail::decode_rsmi_bdfid(bdfid(0xffffffff, 0xf, 0xff, 0x1f, 7)),
            (pci_address{0xffffffff, 0xff, 0x1f, 7}));
  EXPECT_EQ(telemetry_detail::decode_rsmi_bdfid(bdfid(2, 3, 0x83, 0, 0)),
            (pci_address{2, 0x83, 0, 0}));
}

TEST(TelemetryNvml, NamesTheClockEventReasons) {
  EXPECT_TRUE(telemetry_detail::nvml_clock_event_reasons(0).empty());
  EXPECT_EQ(telemetry_detail::nvml_clock_event_reasons(0x1), std::vector<std::string>{"gpu_idle"});
  EXPECT_EQ(telemetry_detail::nvml_clock_event_reasons(0x4 | 0x8 | 0x20 | 0x40 | 0x80),
            (std::vector<std::string>{"sw_power_cap", "hw_slowdown", "sw_thermal", "hw_thermal",
                                      "hw_power_brake"}));
  EXPECT_EQ(telemetry_detail::nvml_clock_event_reasons(0x2 | 0x10 | 0x100),
            (std::vector<std::string>{"applications_clocks_setting", "sync_boost",
                                      "display_clock_setting"}));
  EXPECT_EQ(
      telemetry_detail::nvml_clock_event_reasons(0x4 | 0x200 | (1ull << 63)),
      (std::vector<std::string>{"sw_power_cap", "unknown_0x200", "unknown_0x8000000000000000"}));
}

// rsmi_frequencies_t of ROCm SMI 7.x (ROCm 6.0 on) and of 1.x to 3.0 (ROCm 5.x and older), as the
// library fills them: zeroed (padding too), then its fields set.
struct rsmi_frequencies_v7 {
  bool has_deep_sleep;
  std::uint32_t num_supported;
  std::uint32_t current;
  std::uint64_t frequency[33];
};
struct rsmi_frequencies_v1 {
  std::uint32_t num_supported;
  std::uint32_t current;
  std::uint64_t frequency[32];
};
static_assert(sizeof(rsmi_frequencies_v7) == 280 && sizeof(rsmi_frequencies_v1) == 264);

template <class F>
std::array<std::byte, 1024> as_written(bool deep_sleep, std::uint32_t current,
                                       std::initializer_list<std::uint64_t> mhz) {
  F f;
  std::memset(&f, 0, sizeof f);
  if constexpr (requires { f.has_deep_sleep; }) f.has_deep_sleep = deep_sleep;
  f.num_supported = static_cast<std::uint32_t>(mhz.size());
  f.current = current;
  std::size_t i = 0;
  for (const auto m : mhz)
    f.frequency[i++] = m * 1'000'000;
  std::array<std::byte, 1024> raw{};
  std::memcpy(raw.data(), &f, sizeof f);
  return raw;
}

TEST(TelemetryRsmi, DecodesTheFrequenciesOfRocmSmi7) {
  auto r = telemetry_detail::decode_rsmi_frequencies(
      as_written<rsmi_frequencies_v7>(false, 1, {500, 1500, 2100}));
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->current_mhz, 1500);
  EXPECT_DOUBLE_EQ(r->max_mhz, 2100);
  // Deep sleep: level 0 is the sleep clock.
  r = telemetry_detail::decode_rsmi_frequencies(
      as_written<rsmi_frequencies_v7>(true, 0, {19, 500, 2100}));
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->current_mhz, 19);
  EXPECT_DOUBLE_EQ(r->max_mhz, 2100);
  // All 33 levels.
  std::initializer_list<std::uint64_t> many = {100,  200,  300,  400,  500,  600,  700,  800,  900,
                                               1000, 1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800,
                                               1900, 2000, 2100, 2200, 2300, 2400, 2500, 2600, 2700,
                                               2800, 2900, 3000, 3100, 3200, 3300};
  r = telemetry_detail::decode_rsmi_frequencies(as_written<rsmi_frequencies_v7>(false, 32, many));
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->current_mhz, 3300);
  EXPECT_DOUBLE_EQ(r->max_mhz, 3300);
}

TEST(TelemetryRsmi, DecodesTheFrequenciesOfRocmSmi1To3) {
  auto r = telemetry_detail::decode_rsmi_frequencies(
      as_written<rsmi_frequencies_v1>(false, 7, {852, 991, 1084, 1138, 1200, 1401, 1536, 1630}));
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->current_mhz, 1630);
  EXPECT_DOUBLE_EQ(r->max_mhz, 1630);
  r = telemetry_detail::decode_rsmi_frequencies(
      as_written<rsmi_frequencies_v1>(false, 0, {500, 1700, 2100}));
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->current_mhz, 500);
  EXPECT_DOUBLE_EQ(r->max_mhz, 2100);
  r = telemetry_detail::decode_rsmi_frequencies(as_written<rsmi_frequencies_v1>(false, 0, {800}));
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->current_mhz, 800);
}

TEST(TelemetryRsmi, RejectsInconsistentFrequencies) {
  using telemetry_detail::decode_rsmi_frequencies;
  EXPECT_FALSE(decode_rsmi_frequencies(std::array<std::byte, 1024>{}));  // nothing written
  // The current level past the supported ones (the library's own "unexpected data").
  EXPECT_FALSE(decode_rsmi_frequencies(as_written<rsmi_frequencies_v7>(false, 3, {500, 2100})));
  EXPECT_FALSE(decode_rsmi_frequencies(as_written<rsmi_frequencies_v1>(false, 2, {500, 2100})));
  // A clock of 0 or past 4 GHz.
  EXPECT_FALSE(decode_rsmi_frequencies(as_written<rsmi_frequencies_v7>(false, 0, {0, 2100})));
  EXPECT_FALSE(decode_rsmi_frequencies(as_written<rsmi_frequencies_v1>(false, 0, {500, 5000})));
  // Too short a buffer for either layout.
  const auto raw = as_written<rsmi_frequencies_v7>(false, 1, {500, 2100});
  EXPECT_FALSE(decode_rsmi_frequencies(std::span(raw).first(200)));
  EXPECT_TRUE(decode_rsmi_frequencies(std::span(raw).first(280)));
}

}  // namespace
}  // namespace kernelscan

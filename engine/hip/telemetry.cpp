#include "engine/hip/telemetry.hpp"

#include <dlfcn.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <utility>

namespace kernelscan {

bool telemetry_reading::throttled() const {
  if (reasons_known) {
    for (const auto& r : throttle_reasons) {
      if (r == "hw_slowdown" || r == "sw_thermal" || r == "hw_thermal" || r == "hw_power_brake") {
        return true;
      }
    }
    return false;
  }
  if (!sm_clock_mhz || !max_sm_clock_mhz || *max_sm_clock_mhz <= 0) return false;
  return *sm_clock_mhz < 0.75 * *max_sm_clock_mhz;
}

namespace telemetry_detail {
namespace {

// A hex field of 1..max_digits digits, the whole of `text`.
std::optional<std::uint32_t> parse_hex(std::string_view text, std::size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  std::uint32_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<pci_address> parse_pci_bus_id(std::string_view text) {
  const auto dot = text.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const auto function = parse_hex(text.substr(dot + 1), 1);
  text = text.substr(0, dot);
  const auto last = text.rfind(':');
  if (last == std::string_view::npos) return std::nullopt;
  const auto device = parse_hex(text.substr(last + 1), 2);
  text = text.substr(0, last);
  const auto colon = text.rfind(':');
  const auto bus = parse_hex(colon == std::string_view::npos ? text : text.substr(colon + 1), 2);
  const auto domain = colon == std::string_view::npos ? std::optional<std::uint32_t>(0)
                                                      : parse_hex(text.substr(0, colon), 8);
  if (!function || !device || !bus || !domain) return std::nullopt;
  if (*function > 7 || *device > 0x1f) return std::nullopt;
  return pci_address{*domain, *bus, *device, *function};
}

std::string nvml_bus_id(const pci_address& a) {
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%08X:%02X:%02X.%X", a.domain, a.bus, a.device, a.function);
  return buf.data();
}

pci_address decode_rsmi_bdfid(std::uint64_t bdfid) {
  return pci_address{
      static_cast<std::uint32_t>(bdfid >> 32), static_cast<std::uint32_t>((bdfid >> 8) & 0xff),
      static_cast<std::uint32_t>((bdfid >> 3) & 0x1f), static_cast<std::uint32_t>(bdfid & 0x7)};
}

std::vector<std::string> nvml_clock_event_reasons(std::uint64_t mask) {
  // nvml.h (CUDA 12.6): nvmlClocksEventReason* / nvmlClocksThrottleReason*.
  static constexpr std::pair<std::uint64_t, const char*> names[] = {
      {0x1, "gpu_idle"},
      {0x2, "applications_clocks_setting"},
      {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},
      {0x10, "sync_boost"},
      {0x20, "sw_thermal"},
      {0x40, "hw_thermal"},
      {0x80, "hw_power_brake"},
      {0x100, "display_clock_setting"},
  };
  std::vector<std::string> out;
  for (const auto& [bit, name] : names) {
    if (mask & bit) out.emplace_back(name);
    mask &= ~bit;
  }
  for (int i = 0; i < 64; ++i) {
    const std::uint64_t bit = std::uint64_t{1} << i;
    if (!(mask & bit)) continue;
    std::array<char, 32> buf{};
    std::snprintf(buf.data(), buf.size(), "unknown_0x%llx", static_cast<unsigned long long>(bit));
    out.emplace_back(buf.data());
  }
  return out;
}

namespace {

// Where rsmi_frequencies_t keeps its fields, and how big it is.
struct rsmi_frequencies_layout {
  std::size_t num_supported;
  std::size_t current;
  std::size_t frequency;
  std::size_t capacity;  // RSMI_MAX_NUM_FREQUENCIES
  bool has_deep_sleep_first;
  std::size_t size() const { return frequency + capacity * sizeof(std::uint64_t); }
};

// ROCm SMI 7.x (ROCm 6.0 and later; rocm_smi.h at rsmi_so_ver-7.0, rsmi_pkg_ver-7.2.0 and master
// 2024-10): { bool has_deep_sleep; uint32_t num_supported; uint32_t current;
// uint64_t frequency[33]; }.
constexpr rsmi_frequencies_layout rsmi_layout_v7{4, 8, 16, 33, true};
// ROCm SMI 1.x to 3.0 (ROCm 5.x and older, Debian's librocm-smi64-1; rocm_smi.h at rsmi_so_ver-2.0,
// 2.8 and 3.0): { uint32_t num_supported; uint32_t current; uint64_t frequency[32]; }.
constexpr rsmi_frequencies_layout rsmi_layout_v1{0, 4, 8, 32, false};

template <class T>
T load(std::span<const std::byte> raw, std::size_t offset) {
  T value;
  std::memcpy(&value, raw.data() + offset, sizeof value);
  return value;
}

std::optional<sclk_reading> decode_with(std::span<const std::byte> raw,
                                        const rsmi_frequencies_layout& l) {
  if (raw.size() < l.size()) return std::nullopt;
  if (l.has_deep_sleep_first) {
    // A bool, then padding the library's memset left zero.
    for (std::size_t i = 0; i < l.num_supported; ++i)
      if (raw[i] != std::byte{0} && !(i == 0 && raw[i] == std::byte{1})) return std::nullopt;
  }
  const auto num = load<std::uint32_t>(raw, l.num_supported);
  const auto current = load<std::uint32_t>(raw, l.current);
  if (num == 0 || num > l.capacity || current >= num) return std::nullopt;
  // In Hz. The upper bound, below 2^32, is what keeps the two layouts apart: a v1 reading read as
  // v7 takes the low word of frequency[0] for `current`, which is then >= 1e6 > any count.
  constexpr std::uint64_t lowest = 1'000'000, highest = 4'000'000'000;
  std::uint64_t max_hz = 0;
  for (std::uint32_t i = 0; i < num; ++i) {
    const auto hz = load<std::uint64_t>(raw, l.frequency + i * sizeof(std::uint64_t));
    if (hz < lowest || hz > highest) return std::nullopt;
    max_hz = std::max(max_hz, hz);
  }
  const auto current_hz = load<std::uint64_t>(raw, l.frequency + current * sizeof(std::uint64_t));
  return sclk_reading{static_cast<double>(current_hz) / 1e6, static_cast<double>(max_hz) / 1e6};
}

}  // namespace

std::optional<sclk_reading> decode_rsmi_frequencies(std::span<const std::byte> raw) {
  if (auto r = decode_with(raw, rsmi_layout_v7)) return r;
  return decode_with(raw, rsmi_layout_v1);
}

}  // namespace telemetry_detail

namespace {

using telemetry_detail::pci_address;

template <class F>
F symbol(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

// The first of `names` that dlopen finds, kept for the life of the process: NVML and ROCm SMI
// start threads and register handlers that do not survive dlclose.
void* load_first(std::initializer_list<const char*> names) {
  std::string errors;
  for (const char* name : names) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      spdlog::debug("telemetry: loaded {}", name);
      return handle;
    }
    const char* error = dlerror();
    errors += errors.empty() ? "" : "; ";
    errors += error ? error : name;
  }
  spdlog::debug("telemetry: no management library ({})", errors);
  return nullptr;
}

// A loaded management library's init count: the first user initialises it, the last shuts it
// down. `Api` provides bool start() (logs why not) and void stop().
template <class Api>
class library_users {
 public:
  bool acquire(Api& api) {
    std::lock_guard lock(m_mutex);
    if (m_users == 0 && !api.start()) return false;
    ++m_users;
    return true;
  }
  void release(Api& api) {
    std::lock_guard lock(m_mutex);
    if (--m_users == 0) api.stop();
  }

 private:
  std::mutex m_mutex;
  int m_users = 0;
};

// One user's hold on a library's init; releases it on destruction. Move-only.
template <class Api>
class library_lease {
 public:
  static std::optional<library_lease> take(Api& api) {
    if (!api.users.acquire(api)) return std::nullopt;
    return library_lease(api);
  }
  library_lease(library_lease&& o) noexcept : m_api(std::exchange(o.m_api, nullptr)) {}
  library_lease& operator=(library_lease&&) = delete;
  library_lease(const library_lease&) = delete;
  library_lease& operator=(const library_lease&) = delete;
  ~library_lease() {
    if (m_api) m_api->users.release(*m_api);
  }
  Api& api() const { return *m_api; }

 private:
  explicit library_lease(Api& api) : m_api(&api) {}
  Api* m_api;
};

// ---- NVIDIA: NVML ----------------------------------------------------------------------------
//
// Declared from nvml.h of CUDA 12.6.2 (NVML API version 12; the XuehaiPan/nvml-dev mirror of the
// nvidia-ml-dev package). nvmlReturn_t, nvmlClockType_t and nvmlTemperatureSensors_t are C enums
// (int); nvmlDevice_t is an opaque pointer.

using nvml_return = int;
constexpr nvml_return nvml_success = 0;
constexpr int nvml_clock_sm = 1;         // NVML_CLOCK_SM
constexpr int nvml_temperature_gpu = 0;  // NVML_TEMPERATURE_GPU
struct nvml_device_st;
using nvml_device = nvml_device_st*;

// nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it.
struct nvml_pci_info {
  char bus_id_legacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[32];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
};
static_assert(sizeof(nvml_pci_info) == 68 && offsetof(nvml_pci_info, domain) == 16 &&
              offsetof(nvml_pci_info, bus_id) == 36);

struct nvml_api {
  nvml_return (*init)() = nullptr;      // nvmlInit_v2
  nvml_return (*shutdown)() = nullptr;  // nvmlShutdown
  const char* (*error_string)(nvml_return) = nullptr;
  nvml_return (*handle_by_pci_bus_id)(const char*, nvml_device*) = nullptr;  // _v2
  nvml_return (*device_count)(unsigned int*) = nullptr;                      // _v2
  nvml_return (*handle_by_index)(unsigned int, nvml_device*) = nullptr;      // _v2
  nvml_return (*pci_info)(nvml_device, nvml_pci_info*) = nullptr;            // _v3
  nvml_return (*clock_info)(nvml_device, int, unsigned int*) = nullptr;
  nvml_return (*max_clock_info)(nvml_device, int, unsigned int*) = nullptr;
  nvml_return (*temperature)(nvml_device, int, unsigned int*) = nullptr;
  nvml_return (*power_usage)(nvml_device, unsigned int*) = nullptr;  // milliwatts
  nvml_return (*clocks_event_reasons)(nvml_device, unsigned long long*) = nullptr;
  library_users<nvml_api> users;

  std::string describe(nvml_return rc) const {
    const char* text = error_string ? error_string(rc) : nullptr;
    return fmt::format("NVML error {} ({})", rc, text ? text : "?");
  }
  bool start() {
    const nvml_return rc = init();
    if (rc != nvml_success) spdlog::debug("telemetry: nvmlInit_v2 failed: {}", describe(rc));
    return rc == nvml_success;
  }
  void stop() {
    if (const nvml_return rc = shutdown(); rc != nvml_success)
      spdlog::debug("telemetry: nvmlShutdown failed: {}", describe(rc));
  }

  // The process's NVML, or nullptr when it is absent or lacks a function we cannot do without.
  static nvml_api* get() {
    static nvml_api* const api = load();
    return api;
  }

 private:
  static nvml_api* load() {
    void* h = load_first({"libnvidia-ml.so.1", "libnvidia-ml.so"});
    if (!h) return nullptr;
    auto* a = new nvml_api;  // lives as long as the process, like the handle
    a->init = symbol<decltype(a->init)>(h, "nvmlInit_v2");
    a->shutdown = symbol<decltype(a->shutdown)>(h, "nvmlShutdown");
    a->error_string = symbol<decltype(a->error_string)>(h, "nvmlErrorString");
    a->handle_by_pci_bus_id =
        symbol<decltype(a->handle_by_pci_bus_id)>(h, "nvmlDeviceGetHandleByPciBusId_v2");
    a->device_count = symbol<decltype(a->device_count)>(h, "nvmlDeviceGetCount_v2");
    a->handle_by_index = symbol<decltype(a->handle_by_index)>(h, "nvmlDeviceGetHandleByIndex_v2");
    a->pci_info = symbol<decltype(a->pci_info)>(h, "nvmlDeviceGetPciInfo_v3");
    a->clock_info = symbol<decltype(a->clock_info)>(h, "nvmlDeviceGetClockInfo");
    a->max_clock_info = symbol<decltype(a->max_clock_info)>(h, "nvmlDeviceGetMaxClockInfo");
    a->temperature = symbol<decltype(a->temperature)>(h, "nvmlDeviceGetTemperature");
    a->power_usage = symbol<decltype(a->power_usage)>(h, "nvmlDeviceGetPowerUsage");
    // Renamed in r535; both names are exported since.
    a->clocks_event_reasons =
        symbol<decltype(a->clocks_event_reasons)>(h, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!a->clocks_event_reasons)
      a->clocks_event_reasons =
          symbol<decltype(a->clocks_event_reasons)>(h, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!a->init || !a->shutdown || !a->handle_by_pci_bus_id) {
      spdlog::debug(
          "telemetry: libnvidia-ml lacks nvmlInit_v2, nvmlShutdown or "
          "nvmlDeviceGetHandleByPciBusId_v2");
      delete a;
      return nullptr;
    }
    return a;
  }
};

// The handle of the GPU at `want`: by NVML's own bus id spelling, then by the runtime's, then by
// comparing the numbers of every device NVML lists.
std::optional<nvml_device> nvml_find(const nvml_api& api, const pci_address& want,
                                     std::string_view given) {
  nvml_device device = nullptr;
  const std::string spellings[] = {telemetry_detail::nvml_bus_id(want), std::string(given)};
  for (const auto& id : spellings)
    if (api.handle_by_pci_bus_id(id.c_str(), &device) == nvml_success && device) return device;
  unsigned int count = 0;
  if (!api.device_count || !api.handle_by_index || !api.pci_info ||
      api.device_count(&count) != nvml_success)
    return std::nullopt;
  for (unsigned int i = 0; i < count; ++i) {
    nvml_pci_info info{};
    if (api.handle_by_index(i, &device) != nvml_success ||
        api.pci_info(device, &info) != nvml_success)
      continue;
    // nvmlPciInfo_t has no function number; GPUs are function 0.
    if (info.domain == want.domain && info.bus == want.bus && info.device == want.device)
      return device;
  }
  return std::nullopt;
}

class nvml_telemetry final : public telemetry {
 public:
  nvml_telemetry(library_lease<nvml_api>&& lease, nvml_device device)
      : m_lease(std::move(lease)), m_device(device) {}

  telemetry_reading read() override {
    const nvml_api& api = m_lease.api();
    telemetry_reading r;
    unsigned int value = 0;
    if (api.clock_info && api.clock_info(m_device, nvml_clock_sm, &value) == nvml_success)
      r.sm_clock_mhz = value;
    // The maximum does not change while the driver is loaded; ask until it answers once.
    if (!m_max_clock_mhz && api.max_clock_info &&
        api.max_clock_info(m_device, nvml_clock_sm, &value) == nvml_success && value > 0)
      m_max_clock_mhz = value;
    r.max_sm_clock_mhz = m_max_clock_mhz;
    if (api.temperature && api.temperature(m_device, nvml_temperature_gpu, &value) == nvml_success)
      r.temperature_c = value;
    if (api.power_usage && api.power_usage(m_device, &value) == nvml_success)
      r.power_w = value / 1000.0;
    unsigned long long reasons = 0;
    if (api.clocks_event_reasons && api.clocks_event_reasons(m_device, &reasons) == nvml_success) {
      r.throttle_reasons = telemetry_detail::nvml_clock_event_reasons(reasons);
      r.reasons_known = true;
    }
    return r;
  }

 private:
  library_lease<nvml_api> m_lease;
  nvml_device m_device;
  std::optional<double> m_max_clock_mhz;
};

std::unique_ptr<telemetry> open_nvml(const pci_address& address, std::string_view given) {
  nvml_api* api = nvml_api::get();
  if (!api) return nullptr;
  auto lease = library_lease<nvml_api>::take(*api);
  if (!lease) return nullptr;
  const auto device = nvml_find(*api, address, given);
  if (!device) {
    spdlog::debug("telemetry: NVML lists no GPU at {}", given);
    return nullptr;
  }
  return std::make_unique<nvml_telemetry>(std::move(*lease), *device);
}

// ---- AMD: ROCm SMI ---------------------------------------------------------------------------
//
// Declared from rocm_smi.h of rocm_smi_lib (tags rsmi_so_ver-2.0 to rsmi_pkg_ver-7.2.0 and master
// of 2024-10; these signatures are the same in all). rsmi_status_t, rsmi_clk_type_t and
// rsmi_temperature_metric_t are C enums (int). rsmi_frequencies_t changed layout: see
// telemetry_detail::decode_rsmi_frequencies, which reads it from a buffer larger than either.

using rsmi_status = int;
constexpr rsmi_status rsmi_success = 0;
constexpr int rsmi_clk_type_sys = 0;             // RSMI_CLK_TYPE_SYS
constexpr std::uint32_t rsmi_temp_edge = 0;      // RSMI_TEMP_TYPE_EDGE
constexpr std::uint32_t rsmi_temp_junction = 1;  // RSMI_TEMP_TYPE_JUNCTION
constexpr int rsmi_temp_current = 0;             // RSMI_TEMP_CURRENT

struct rsmi_api {
  rsmi_status (*init)(std::uint64_t) = nullptr;
  rsmi_status (*shut_down)() = nullptr;
  rsmi_status (*num_monitor_devices)(std::uint32_t*) = nullptr;
  rsmi_status (*pci_id)(std::uint32_t, std::uint64_t*) = nullptr;
  rsmi_status (*clk_freq)(std::uint32_t, int, void*) = nullptr;
  rsmi_status (*temp_metric)(std::uint32_t, std::uint32_t, int, std::int64_t*) = nullptr;
  rsmi_status (*power_ave)(std::uint32_t, std::uint32_t, std::uint64_t*) = nullptr;  // microwatts
  rsmi_status (*socket_power)(std::uint32_t, std::uint64_t*) = nullptr;  // microwatts, ROCm 6+
  library_users<rsmi_api> users;

  bool start() {
    const rsmi_status rc = init(0);
    if (rc != rsmi_success) spdlog::debug("telemetry: rsmi_init failed: status {}", rc);
    return rc == rsmi_success;
  }
  void stop() {
    if (const rsmi_status rc = shut_down(); rc != rsmi_success)
      spdlog::debug("telemetry: rsmi_shut_down failed: status {}", rc);
  }

  static rsmi_api* get() {
    static rsmi_api* const api = load();
    return api;
  }

 private:
  static rsmi_api* load() {
    // .so.7: ROCm 6.x; .so.5 and .so.6: ROCm 5.x; .so.1: Debian's librocm-smi64-1. ROCm's own
    // packages install to /opt/rocm/lib, which is not always on the loader's path.
    void* h =
        load_first({"librocm_smi64.so.7", "librocm_smi64.so.6", "librocm_smi64.so.5",
                    "librocm_smi64.so.1", "librocm_smi64.so", "/opt/rocm/lib/librocm_smi64.so"});
    if (!h) return nullptr;
    auto* a = new rsmi_api;  // lives as long as the process, like the handle
    a->init = symbol<decltype(a->init)>(h, "rsmi_init");
    a->shut_down = symbol<decltype(a->shut_down)>(h, "rsmi_shut_down");
    a->num_monitor_devices =
        symbol<decltype(a->num_monitor_devices)>(h, "rsmi_num_monitor_devices");
    a->pci_id = symbol<decltype(a->pci_id)>(h, "rsmi_dev_pci_id_get");
    a->clk_freq = symbol<decltype(a->clk_freq)>(h, "rsmi_dev_gpu_clk_freq_get");
    a->temp_metric = symbol<decltype(a->temp_metric)>(h, "rsmi_dev_temp_metric_get");
    a->power_ave = symbol<decltype(a->power_ave)>(h, "rsmi_dev_power_ave_get");
    a->socket_power = symbol<decltype(a->socket_power)>(h, "rsmi_dev_current_socket_power_get");
    if (!a->init || !a->shut_down || !a->num_monitor_devices || !a->pci_id) {
      spdlog::debug(
          "telemetry: librocm_smi64 lacks rsmi_init, rsmi_shut_down, "
          "rsmi_num_monitor_devices or rsmi_dev_pci_id_get");
      delete a;
      return nullptr;
    }
    return a;
  }
};

class rsmi_telemetry final : public telemetry {
 public:
  rsmi_telemetry(library_lease<rsmi_api>&& lease, std::uint32_t index)
      : m_lease(std::move(lease)), m_index(index) {}

  telemetry_reading read() override {
    const rsmi_api& api = m_lease.api();
    telemetry_reading r;
    // Larger than rsmi_frequencies_t of any version (264 or 280 bytes); the library zeroes its
    // own struct's size of it.
    alignas(8) std::array<std::byte, 1024> freq{};
    if (api.clk_freq && api.clk_freq(m_index, rsmi_clk_type_sys, freq.data()) == rsmi_success) {
      if (const auto sclk = telemetry_detail::decode_rsmi_frequencies(freq)) {
        r.sm_clock_mhz = sclk->current_mhz;
        r.max_sm_clock_mhz = sclk->max_mhz;
      }
    }
    std::int64_t millidegrees = 0;
    for (const std::uint32_t sensor : {rsmi_temp_junction, rsmi_temp_edge}) {
      if (api.temp_metric &&
          api.temp_metric(m_index, sensor, rsmi_temp_current, &millidegrees) == rsmi_success) {
        r.temperature_c = static_cast<double>(millidegrees) / 1000.0;
        break;
      }
    }
    // Socket power where the part has it (MI300 has no average), else the average. A running
    // GPU never draws 0 W: a 0 means the reading is not there.
    std::uint64_t microwatts = 0;
    if ((api.socket_power && api.socket_power(m_index, &microwatts) == rsmi_success &&
         microwatts > 0) ||
        (api.power_ave && api.power_ave(m_index, 0, &microwatts) == rsmi_success && microwatts > 0))
      r.power_w = static_cast<double>(microwatts) / 1e6;
    return r;
  }

 private:
  library_lease<rsmi_api> m_lease;
  std::uint32_t m_index;
};

std::unique_ptr<telemetry> open_rsmi(const pci_address& address, std::string_view given) {
  rsmi_api* api = rsmi_api::get();
  if (!api) return nullptr;
  auto lease = library_lease<rsmi_api>::take(*api);
  if (!lease) return nullptr;
  std::uint32_t count = 0;
  if (const rsmi_status rc = api->num_monitor_devices(&count); rc != rsmi_success) {
    spdlog::debug("telemetry: rsmi_num_monitor_devices failed: status {}", rc);
    return nullptr;
  }
  // Under compute partitioning (MI300 CPX) several devices share one PCI address, told apart
  // only by the BDFID's partition bits, which the runtime's bus id lacks: the first one answers
  // for all; their clocks are the socket's anyway.
  for (std::uint32_t i = 0; i < count; ++i) {
    std::uint64_t bdfid = 0;
    if (api->pci_id(i, &bdfid) == rsmi_success &&
        telemetry_detail::decode_rsmi_bdfid(bdfid) == address)
      return std::make_unique<rsmi_telemetry>(std::move(*lease), i);
  }
  spdlog::debug("telemetry: ROCm SMI lists no GPU at {} (of {})", given, count);
  return nullptr;
}

}  // namespace

std::unique_ptr<telemetry> telemetry::open(std::string_view vendor, std::string_view pci_bus_id) {
  try {
    const auto address = telemetry_detail::parse_pci_bus_id(pci_bus_id);
    if (!address) {
      spdlog::debug("telemetry: '{}' is not a PCI bus id", pci_bus_id);
      return nullptr;
    }
    if (vendor == "NVIDIA") return open_nvml(*address, pci_bus_id);
    if (vendor == "AMD") return open_rsmi(*address, pci_bus_id);
    spdlog::debug("telemetry: no management library for vendor '{}'", vendor);
    return nullptr;
  } catch (const std::exception& e) {  // allocation, logging
    spdlog::debug("telemetry: open failed: {}", e.what());
    return nullptr;
  }
}

}  // namespace kernelscan

#include "server/device_selection.hpp"

#include "engine/hip/telemetry.hpp"

namespace kernelscan {

bool served_by_hip(const device_info& d, const std::vector<device_info>& hip_gpus) {
  if (d.type == "cpu") return false;
  const auto address = telemetry_detail::parse_pci_bus_id(d.pci_bus_id);
  for (const auto& g : hip_gpus) {
    if (!address) {
      if (g.vendor == d.vendor) return true;  // cannot tell them apart: never own it twice
      continue;
    }
    const auto other = telemetry_detail::parse_pci_bus_id(g.pci_bus_id);
    if (other ? *other == *address : g.vendor == d.vendor) return true;
  }
  return false;
}

std::vector<device_info> select_devices(const std::string& engine,
                                        const std::vector<device_info>& probed) {
  std::vector<device_info> hip, out;
  for (const auto& d : probed) {
    if (d.engine == engine_kind::hip) hip.push_back(d);
  }
  if (engine == "mock") return out;
  if (engine != "opencl") out = hip;
  if (engine == "hip") return out;
  for (const auto& d : probed) {
    if (d.engine != engine_kind::opencl) continue;
    if (engine == "auto" && d.type == "cpu") continue;
    if (engine != "opencl" && served_by_hip(d, hip)) continue;
    out.push_back(d);
  }
  return out;
}

}  // namespace kernelscan
